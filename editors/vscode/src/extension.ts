/**
 * DriverOS for VS Code: a thin client of driveros-lsp. It starts the server, shows the runs'
 * trace and status, forwards commands and hands proposals to VS Code's review UI. All agent
 * behaviour lives in the server.
 */

import * as vscode from "vscode";

import { DriverosClient } from "./client";
import { firstLine } from "./format";
import { type CommandContext, refreshRuns, registerCommands } from "./commands";
import { PROPOSAL_SCHEME, ProposalContentProvider } from "./review";
import { RunStore } from "./runs";
import { StatusBar } from "./status";
import { TRACE_VIEW_ID, TraceTreeProvider } from "./traceView";

let client: DriverosClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("DriverOS", { log: true });
  const store = new RunStore();
  const status = new StatusBar(() => ({ running: store.running().length, pending: store.pendingProposals().length }));
  const tree = new TraceTreeProvider(store);
  const view = vscode.window.createTreeView(TRACE_VIEW_ID, { treeDataProvider: tree, showCollapseAll: true });
  const content = new ProposalContentProvider(store);
  const storeSub = store.onDidChange(() => status.render());

  const onProposal = (runId: string): void => {
    const run = store.get(runId);
    const n = run?.proposal?.length ?? 0;
    void refreshRuns(ctx);
    void vscode.window
      .showInformationMessage(`DriverOS proposes changes to ${n} file${n === 1 ? "" : "s"}: ${firstLine(run?.task, 60) || runId}${run?.council?.verdict !== undefined ? ` (council: ${run.council.verdict})` : ""}`, "Review Proposal", "Show Trace")
      .then((choice) => {
        if (choice === "Review Proposal") {
          void vscode.commands.executeCommand("driveros.reviewProposal", runId);
        } else if (choice === "Show Trace") {
          void vscode.commands.executeCommand("driveros.showTrace", runId);
        }
      });
  };
  client = new DriverosClient(store, status, log, onProposal);
  const ctx: CommandContext = { client, store, tree, view, log };

  context.subscriptions.push(
    log,
    status,
    tree,
    view,
    content,
    { dispose: () => storeSub.dispose() },
    vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, content),
    ...registerCommands(ctx),
  );
  await client.start();
}

export async function deactivate(): Promise<void> {
  const c = client;
  client = undefined;
  await c?.dispose();
}
