/** The palette commands: each one gathers its input in the editor and forwards to the server. */

import * as vscode from "vscode";

import type { DriverosClient } from "./client";
import type { CommandResult, StartResult } from "./events";
import { firstLine, formatTokens } from "./format";
import {
  CMD_AGENT_ACCEPT,
  CMD_AGENT_CANCEL,
  CMD_AGENT_COMMAND,
  CMD_AGENT_FIX,
  CMD_AGENT_FOLLOW_UP,
  CMD_AGENT_LIST,
  CMD_AGENT_REVERT,
  CMD_AGENT_START,
  CMD_REVIEW_ACCEPT,
  CMD_REVIEW_REJECT,
} from "./protocol";
import { showProposalDiff } from "./review";
import type { RunState, RunStore, RunSummary } from "./runs";
import type { TraceNode } from "./traceModel";
import { TRACE_VIEW_ID, type TraceTreeProvider } from "./traceView";

export interface CommandContext {
  client: DriverosClient;
  store: RunStore;
  tree: TraceTreeProvider;
  view: vscode.TreeView<TraceNode>;
  log: vscode.LogOutputChannel;
}

type RunArg = TraceNode | string | { runId: string } | undefined;

function runIdOf(arg: RunArg): string | undefined {
  if (typeof arg === "string") {
    return arg;
  }
  return arg?.runId;
}

function describeRun(run: RunState): string {
  const state = run.status === "running" ? "running" : (run.result?.outcome ?? run.serverState ?? "finished");
  const count = run.proposal?.length ?? 0;
  const review = run.proposalPending ? ` · ${count} ${count === 1 ? "file" : "files"} to review` : "";
  return `${state}${review} · ${formatTokens(run.usage.total_tokens)}`;
}

async function pickRun(runs: RunState[], placeHolder: string, none: string): Promise<RunState | undefined> {
  if (runs.length === 0) {
    void vscode.window.showInformationMessage(`DriverOS: ${none}`);
    return undefined;
  }
  if (runs.length === 1) {
    return runs[0];
  }
  const picked = await vscode.window.showQuickPick(
    runs.map((run) => ({ label: firstLine(run.task, 80) || run.id, description: describeRun(run), detail: `run ${run.id}`, run })),
    { placeHolder, matchOnDescription: true, matchOnDetail: true },
  );
  return picked?.run;
}

/** Refresh run states and pending proposals from the server. */
export async function refreshRuns(ctx: CommandContext): Promise<void> {
  if (!ctx.client.running) {
    return;
  }
  const answer = await ctx.client.execute<RunSummary[] | { runs: RunSummary[] }>(CMD_AGENT_LIST, {});
  const runs = Array.isArray(answer) ? answer : answer?.runs;
  if (Array.isArray(runs)) {
    ctx.store.sync(runs);
  }
}

async function startRun(ctx: CommandContext, command: string, arg: object, task: string): Promise<void> {
  const result = await ctx.client.execute<StartResult>(command, arg);
  if (result?.runId === undefined) {
    return;
  }
  ctx.store.started(result.runId, task);
  ctx.log.info(`[${result.runId}] started: ${task}`);
  await showTrace(ctx, result.runId);
}

/** A custom command (docs/extending.md): picked from the server's list, arguments typed. */
async function runCustomCommand(ctx: CommandContext): Promise<void> {
  const listed = await ctx.client.execute<CommandResult>(CMD_AGENT_COMMAND, {});
  const commands = listed?.commands ?? [];
  if (commands.length === 0) {
    void vscode.window.showInformationMessage(
      "DriverOS: no custom commands: add NAME.md to ~/.config/driveros/commands/ (or a trusted workspace's .driveros/commands/).",
    );
    return;
  }
  const picked = await vscode.window.showQuickPick(
    commands.map((c) => ({ label: `/${c.name}`, description: c.description, detail: [c.argumentHint, c.source].filter((s) => s !== "").join(" · "), command: c })),
    { title: "DriverOS: Run Custom Command", placeHolder: "Which command?", matchOnDescription: true },
  );
  if (picked === undefined) {
    return;
  }
  const args = await vscode.window.showInputBox({
    title: `DriverOS: /${picked.command.name}`,
    prompt: picked.command.argumentHint !== "" ? `Arguments: ${picked.command.argumentHint}` : "Arguments (may be empty)",
    ignoreFocusOut: true,
  });
  if (args === undefined) {
    return;
  }
  const task = `/${picked.command.name} ${args}`.trim();
  await startRun(ctx, CMD_AGENT_COMMAND, { name: picked.command.name, arguments: args }, task);
}

/** Focus the trace view and reveal a run (default: the newest) with its turns expanded. */
async function showTrace(ctx: CommandContext, runId?: string): Promise<void> {
  await vscode.commands.executeCommand(`${TRACE_VIEW_ID}.focus`);
  const id = runId ?? ctx.store.all()[0]?.id;
  if (id === undefined) {
    return;
  }
  // The tree redraws within 100 ms of a change and the view resolves its nodes lazily after
  // being focused: retry the reveal for a moment instead of failing the command.
  let lastError = "";
  for (let i = 0; i < 25; i++) {
    const node = ctx.tree.runRoot(id);
    if (node !== undefined) {
      try {
        await ctx.view.reveal(node, { select: true, focus: false, expand: 2 });
        return;
      } catch (err) {
        lastError = err instanceof Error ? err.message : String(err);
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  ctx.log.warn(`cannot reveal run ${id} in the trace view: ${lastError || "not in the view"}`);
}

async function fixDiagnostics(ctx: CommandContext, atCursor: boolean): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.document.uri.scheme !== "file") {
    void vscode.window.showInformationMessage("DriverOS: open a workspace file with diagnostics first.");
    return;
  }
  const uri = editor.document.uri;
  let diagnostics = vscode.languages.getDiagnostics(uri);
  if (atCursor) {
    const pos = editor.selection.active;
    diagnostics = diagnostics.filter((d) => d.range.contains(pos) || d.range.start.line === pos.line);
  }
  if (atCursor && diagnostics.length === 0) {
    void vscode.window.showInformationMessage("DriverOS: no diagnostics at the cursor.");
    return;
  }
  const lc = ctx.client.ready();
  if (lc === undefined) {
    return;
  }
  const wire = await lc.code2ProtocolConverter.asDiagnostics(diagnostics);
  const file = vscode.workspace.asRelativePath(uri);
  // "Fix all" also covers problems only the build reports: the server accepts no diagnostics with all.
  const task = atCursor
    ? `Fix ${diagnostics.length === 1 ? (diagnostics[0]?.message ?? "") : `${diagnostics.length} diagnostics`} in ${file}`
    : `Fix all problems in ${file}`;
  const arg = atCursor ? { uri: lc.code2ProtocolConverter.asUri(uri), diagnostics: wire } : { uri: lc.code2ProtocolConverter.asUri(uri), diagnostics: wire, all: true };
  await startRun(ctx, CMD_AGENT_FIX, arg, task);
}

async function reviewRun(ctx: CommandContext, arg: RunArg): Promise<RunState | undefined> {
  await refreshRuns(ctx);
  const id = runIdOf(arg);
  return id !== undefined ? ctx.store.get(id) : pickRun(ctx.store.pendingProposals(), "Review which proposal?", "no proposal is waiting for review.");
}

async function reject(ctx: CommandContext, run: RunState, askFeedback: boolean): Promise<void> {
  let feedback: string | undefined;
  if (askFeedback) {
    feedback = await vscode.window.showInputBox({
      title: "Reject the proposal",
      prompt: "Feedback for the agent (it continues the run with it); leave empty to just reject",
      placeHolder: "e.g. keep the public signature, fix the caller instead",
    });
    if (feedback === undefined) {
      return;
    }
  }
  const arg = feedback !== undefined && feedback.trim() !== "" ? { runId: run.id, feedback } : { runId: run.id };
  const done = await ctx.client.execute<unknown>(CMD_REVIEW_REJECT, arg);
  if (done !== undefined) {
    ctx.store.settled(run.id);
    await refreshRuns(ctx);
  }
}

async function accept(ctx: CommandContext, run: RunState): Promise<void> {
  // The server answers with an annotated workspace edit: VS Code shows it in the Refactor Preview.
  await ctx.client.execute<unknown>(CMD_REVIEW_ACCEPT, { runId: run.id });
  await refreshRuns(ctx);
}

export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  const reg = (id: string, fn: (...args: never[]) => unknown): vscode.Disposable => vscode.commands.registerCommand(id, fn);
  return [
    reg("driveros.restartServer", async () => {
      await ctx.client.restart();
    }),
    reg("driveros.runTask", async () => {
      const task = await vscode.window.showInputBox({
        title: "DriverOS: Run Task",
        prompt: "What should the agent do? It works in a sandbox copy and proposes its edits for review.",
        placeHolder: "e.g. add a --verbose flag to the CLI and test it",
        ignoreFocusOut: true,
      });
      if (task === undefined || task.trim() === "") {
        return;
      }
      const editor = vscode.window.activeTextEditor;
      const lc = ctx.client.languageClient;
      const arg: Record<string, unknown> = { task };
      if (editor !== undefined && editor.document.uri.scheme === "file" && lc !== undefined) {
        arg["uri"] = lc.code2ProtocolConverter.asUri(editor.document.uri);
        if (!editor.selection.isEmpty) {
          arg["range"] = lc.code2ProtocolConverter.asRange(editor.selection);
        }
      }
      await startRun(ctx, CMD_AGENT_START, arg, task);
    }),
    reg("driveros.runCommand", () => runCustomCommand(ctx)),
    reg("driveros.fixAtCursor", () => fixDiagnostics(ctx, true)),
    reg("driveros.fixFile", () => fixDiagnostics(ctx, false)),
    reg("driveros.cancelRun", async (arg: RunArg) => {
      const id = runIdOf(arg);
      const run = id !== undefined ? ctx.store.get(id) : await pickRun(ctx.store.running(), "Cancel which run?", "no run is running.");
      if (run !== undefined) {
        // Answers once the run has stopped and its sandbox is cleaned up.
        await ctx.client.execute<unknown>(CMD_AGENT_CANCEL, { runId: run.id });
        await refreshRuns(ctx);
      }
    }),
    reg("driveros.reviewProposal", async (arg: RunArg) => {
      const run = await reviewRun(ctx, arg);
      if (run === undefined || run.proposal === undefined) {
        return;
      }
      type Item = vscode.QuickPickItem & { act: () => Promise<void> };
      const items: Item[] = [
        { label: "$(checklist) Open in Refactor Preview", description: "review every hunk, tick and apply", act: () => accept(ctx, run) },
        ...run.proposal.map((f) => ({ label: `$(diff) ${f.path}`, description: f.action ?? "modify", act: () => showProposalDiff(run, f) })),
        { label: "$(feedback) Reject with feedback…", description: "the agent continues with your feedback", act: () => reject(ctx, run, true) },
        { label: "$(close) Reject", description: "discard the proposal", act: () => reject(ctx, run, false) },
      ];
      const picked = await vscode.window.showQuickPick(items, { title: `Proposal of “${firstLine(run.task, 60) || run.id}”`, placeHolder: firstLine(run.rationale, 100) });
      await picked?.act();
    }),
    reg("driveros.acceptProposal", async (arg: RunArg) => {
      const run = await reviewRun(ctx, arg);
      if (run !== undefined) {
        await accept(ctx, run);
      }
    }),
    reg("driveros.rejectProposal", async (arg: RunArg) => {
      const run = await reviewRun(ctx, arg);
      if (run !== undefined) {
        await reject(ctx, run, true);
      }
    }),
    reg("driveros.showProposalDiff", async (arg: TraceNode | { runId: string; path: string } | undefined) => {
      const run = arg?.runId !== undefined ? ctx.store.get(arg.runId) : undefined;
      const file = run?.proposal?.find((f) => f.path === arg?.path);
      if (run !== undefined && file !== undefined) {
        await showProposalDiff(run, file);
      }
    }),
    reg("driveros.showTrace", (arg: RunArg) => showTrace(ctx, runIdOf(arg))),
    reg("driveros.showRuns", async () => {
      await refreshRuns(ctx);
      const run = await pickRun(ctx.store.all(), "DriverOS runs", "no runs yet: use “DriverOS: Run Task” or a quick fix.");
      if (run === undefined) {
        return;
      }
      type Item = vscode.QuickPickItem & { id: string };
      const items: Item[] = [{ label: "$(list-tree) Show Trace", id: "driveros.showTrace" }];
      if (run.status === "running") {
        items.push({ label: "$(debug-stop) Cancel Run", id: "driveros.cancelRun" });
      }
      if (run.proposalPending) {
        items.push({ label: "$(git-pull-request) Review Proposal", id: "driveros.reviewProposal" });
      }
      const picked = ctx.store.all().length === 1 && items.length === 1 ? items[0] : await vscode.window.showQuickPick(items, { title: firstLine(run.task, 60) || run.id });
      if (picked !== undefined) {
        await vscode.commands.executeCommand(picked.id, run.id);
      }
    }),
    reg("driveros.acceptThrough", async (arg: TraceNode | undefined) => {
      if (arg?.runId !== undefined && arg.checkpoint !== undefined) {
        // The narrowed proposal comes back as an annotated edit (the Refactor Preview).
        await ctx.client.execute<unknown>(CMD_AGENT_ACCEPT, { runId: arg.runId, through: arg.checkpoint });
        await refreshRuns(ctx);
      }
    }),
    reg("driveros.revertTo", async (arg: TraceNode | undefined) => {
      if (arg?.runId !== undefined && arg.checkpoint !== undefined) {
        const answer = await ctx.client.execute<unknown>(CMD_AGENT_REVERT, { runId: arg.runId, to: arg.checkpoint });
        if (answer !== undefined) {
          ctx.store.reverted(arg.runId, arg.checkpoint);
        }
        await refreshRuns(ctx);
      }
    }),
    reg("driveros.followUp", async (arg: RunArg) => {
      const id = runIdOf(arg);
      const run = id !== undefined ? ctx.store.get(id) : await pickRun(ctx.store.pendingProposals(), "Follow up on which run?", "no proposal is waiting for review.");
      if (run === undefined) {
        return;
      }
      const task = await vscode.window.showInputBox({
        title: "DriverOS: Follow Up",
        prompt: "The next instruction: the agent continues this run with its conversation and its changes so far.",
        ignoreFocusOut: true,
      });
      if (task !== undefined && task.trim() !== "") {
        await ctx.client.execute<unknown>(CMD_AGENT_FOLLOW_UP, { runId: run.id, task });
        await refreshRuns(ctx);
      }
    }),
    reg("driveros.showLog", () => ctx.log.show()),
    reg("driveros.clearFinished", () => ctx.store.clearFinished()),
  ];
}
