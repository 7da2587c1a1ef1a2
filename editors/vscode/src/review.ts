/**
 * Reviewing a run's proposal: the per-file diff of the workspace file against a read-only virtual
 * document of the proposed version (the `newText` the server sends), reopening the Refactor Preview, and rejecting with feedback. Deciding and
 * applying stay on the server (driveros.review.accept / driveros.review.reject).
 */

import * as vscode from "vscode";

import type { ProposalFileParams } from "./events";
import type { RunState, RunStore } from "./runs";

export const PROPOSAL_SCHEME = "driveros-proposal";

/** `driveros-proposal:/<path>?run=<id>&side=after|before` */
export function proposalUri(runId: string, path: string, side: "after" | "before"): vscode.Uri {
  const p = path.startsWith("/") ? path : `/${path}`;
  return vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: p, query: `run=${encodeURIComponent(runId)}&side=${side}` });
}

export function parseProposalUri(uri: vscode.Uri): { runId: string; path: string; side: "after" | "before" } | undefined {
  const params = new URLSearchParams(uri.query);
  const runId = params.get("run");
  if (runId === null) {
    return undefined;
  }
  return { runId, path: uri.path.replace(/^\//, ""), side: params.get("side") === "before" ? "before" : "after" };
}

/** The workspace file a proposal file changes (absolute paths and URIs are used as they are). */
export function workspaceUri(file: ProposalFileParams, path = file.path): vscode.Uri | undefined {
  if (file.uri !== undefined && path === file.path) {
    return vscode.Uri.parse(file.uri);
  }
  if (path.startsWith("/")) {
    return vscode.Uri.file(path);
  }
  const folder = vscode.workspace.workspaceFolders?.[0];
  return folder === undefined ? undefined : vscode.Uri.joinPath(folder.uri, path);
}

async function currentText(uri: vscode.Uri | undefined): Promise<string> {
  if (uri === undefined) {
    return "";
  }
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open !== undefined) {
    return open.getText();
  }
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  } catch {
    return "";
  }
}

/** Serves the before/after versions of proposal files as read-only documents. */
export class ProposalContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly subscription: { dispose(): void };

  constructor(private readonly store: RunStore) {
    this.subscription = store.onDidChange((run) => {
      for (const doc of vscode.workspace.textDocuments) {
        const parsed = doc.uri.scheme === PROPOSAL_SCHEME ? parseProposalUri(doc.uri) : undefined;
        if (parsed !== undefined && (run === undefined || parsed.runId === run.id)) {
          this.changed.fire(doc.uri);
        }
      }
    });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const parsed = parseProposalUri(uri);
    const run = parsed === undefined ? undefined : this.store.get(parsed.runId);
    const file = run?.proposal?.find((f) => f.path === parsed?.path);
    if (parsed === undefined || file === undefined) {
      return "(this proposal is no longer available)";
    }
    if (file.binary === true) {
      return "(binary file)";
    }
    if (parsed.side === "before") {
      return file.action === "create" ? "" : currentText(workspaceUri(file, file.oldPath ?? file.path));
    }
    if (file.action === "delete") {
      return "";
    }
    if (typeof file.newText === "string") {
      return file.newText;
    }
    return `(the proposed content was not sent: the file is too large to show as text)\n\n${file.diff ?? ""}`;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

/** Open the diff of one proposal file: current (or pre-run) version on the left, sandbox on the right. */
export async function showProposalDiff(run: RunState, file: ProposalFileParams): Promise<void> {
  const left = file.action === "create" ? proposalUri(run.id, file.path, "before") : workspaceUri(file, file.oldPath ?? file.path);
  const right = proposalUri(run.id, file.path, "after");
  const title = `${file.path} ↔ DriverOS proposal (${file.action ?? "modify"})`;
  await vscode.commands.executeCommand("vscode.diff", left ?? proposalUri(run.id, file.path, "before"), right, title, { preview: true });
}
