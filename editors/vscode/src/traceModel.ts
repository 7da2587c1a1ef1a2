/**
 * Turns a run's state into a plain tree of display nodes. Kept free of the `vscode` module so
 * the shape of the trace view is unit-tested; src/traceView.ts maps nodes to TreeItems.
 */

import type { DiagnosticItem, TraceEvent, TraceLocation } from "./events";
import { firstLine, formatArguments, formatCost, formatDuration, formatTokens } from "./format";
import type { RunState, TurnItem, TurnState } from "./runs";

export type NodeIcon =
  | "run"
  | "running"
  | "ok"
  | "warning"
  | "error"
  | "turn"
  | "thinking"
  | "text"
  | "tool"
  | "diagnostics"
  | "added"
  | "removed"
  | "memory"
  | "approval"
  | "stuck"
  | "feedback"
  | "edit"
  | "checkpoint"
  | "proposal"
  | "file"
  | "location"
  | "line";

export interface TraceNode {
  /** Stable across updates so the tree keeps its expansion state. */
  id: string;
  label: string;
  description?: string;
  tooltip?: string;
  icon: NodeIcon;
  children: TraceNode[];
  /** Expanded by default (a running run, its last turn). */
  expanded?: boolean;
  /** Drives the context menus: "run.running", "run.finished", "run.proposal", "proposalFile". */
  contextValue?: string;
  runId?: string;
  path?: string;
  /** A checkpoint node's number ("Accept through here", "Revert to here"). */
  checkpoint?: number;
  /** A place a tool's answer names: clicking the node opens the file there. */
  location?: TraceLocation;
}

/** Locations listed under a tool call at most (the server sends up to 200). */
const LOCATIONS = 200;

/**
 * `/abs/pkg/use.py:5:9`: the location's file and 1-based line and column (the trace view shows
 * the path relative to the workspace: traceView.ts).
 */
export function locationLabel(loc: TraceLocation, path: (uri: string) => string = filePath): string {
  return `${path(loc.uri)}:${loc.range.start.line + 1}:${loc.range.start.character + 1}`;
}

function filePath(uri: string): string {
  try {
    return decodeURIComponent(new URL(uri).pathname);
  } catch {
    return uri; // not a URL: shown as it is
  }
}

function locationNodes(id: string, locations: readonly TraceLocation[]): TraceNode[] {
  return locations.slice(0, LOCATIONS).map((loc, i) => ({
    id: `${id}/loc${i}`,
    label: locationLabel(loc),
    tooltip: loc.uri,
    icon: "location" as const,
    children: [],
    location: loc,
  }));
}

const OUTPUT_LINES = 40;

function lines(id: string, text: string | undefined, max = OUTPUT_LINES): TraceNode[] {
  const all = (text ?? "").replace(/\s+$/, "").split("\n");
  const shown = all.slice(0, max).map((l, i) => ({ id: `${id}/${i}`, label: l === "" ? " " : l, icon: "line" as const, children: [] }));
  if (all.length > max) {
    shown.push({ id: `${id}/more`, label: `… ${all.length - max} more lines`, icon: "line", children: [] });
  }
  return all.length === 1 && all[0] === "" ? [] : shown;
}

function diagnosticLabel(d: DiagnosticItem): string {
  const where = d.line !== undefined ? `${d.path}:${d.line + 1}` : d.path;
  return `${where} ${d.message}`;
}

function toolNode(id: string, item: Extract<TurnItem, { kind: "tool" }>): TraceNode {
  const name = item.call.name ?? "tool";
  const args = formatArguments(item.call.arguments);
  const r = item.result;
  let description = "running…";
  let icon: NodeIcon = "tool";
  if (r !== undefined) {
    description = `${r.ok === false ? "failed" : "ok"} · ${formatDuration(r.duration_ms)}${r.truncated === true ? " · truncated" : ""}`;
    icon = r.ok === false ? "error" : "tool";
  }
  const children: TraceNode[] = [];
  if (item.call.arguments !== undefined && Object.keys(item.call.arguments).length > 0) {
    children.push({
      id: `${id}/args`,
      label: "arguments",
      icon: "line",
      children: lines(`${id}/args`, JSON.stringify(item.call.arguments, null, 2)),
    });
  }
  if (r !== undefined) {
    children.push({ id: `${id}/out`, label: "result", description: firstLine(r.output, 60), icon: "line", children: lines(`${id}/out`, r.output) });
  }
  children.push(...locationNodes(id, item.locations ?? []));
  return { id, label: args === "" ? name : `${name} ${args}`, description, icon, children, tooltip: r?.output };
}

/** ` (asked, by Visual Studio Code, for this run)`: who decided an approval and for how long. */
export function approvalDetail(e: TraceEvent): string {
  const parts: string[] = [];
  if (e.asked === true) {
    parts.push("asked");
  }
  if (typeof e.answered_by === "string" && e.answered_by !== "") {
    parts.push(`by ${e.answered_by}`);
  }
  if (e.scope === "run") {
    parts.push("for this run");
  } else if (e.scope === "once") {
    parts.push("once");
  }
  return parts.length > 0 ? ` (${parts.join(", ")})` : "";
}

function eventNode(id: string, e: TraceEvent): TraceNode {
  switch (e.type) {
    case "diagnostics": {
      const added = e.new ?? [];
      const fixed = e.fixed ?? [];
      return {
        id,
        label: "diagnostics",
        description: `${e.total ?? 0} total · ${added.length} new · ${fixed.length} fixed`,
        icon: "diagnostics",
        children: [
          ...added.map((d, i) => ({ id: `${id}/n${i}`, label: diagnosticLabel(d), description: "new", icon: "added" as const, children: [] })),
          ...fixed.map((d, i) => ({ id: `${id}/f${i}`, label: diagnosticLabel(d), description: "fixed", icon: "removed" as const, children: [] })),
        ],
      };
    }
    case "approval":
      return { id, label: `${e.name ?? "action"} ${e.decision ?? ""}${approvalDetail(e)}`, description: e.reason, icon: "approval", children: [] };
    case "stuck":
      return {
        id,
        label: `stuck: ${e.detector ?? ""}`,
        description: e.detail,
        icon: "stuck",
        children: (e.evidence ?? []).map((l, i) => ({ id: `${id}/${i}`, label: l, icon: "line" as const, children: [] })),
      };
    case "edit":
      return { id, label: `${e.action ?? "modify"} ${e.path ?? ""}`, icon: "edit", children: [] };
    case "checkpoint": {
      const files = e.files ?? [];
      return {
        id,
        label: `checkpoint ${e.checkpoint ?? "?"}`,
        description: files.join(", "),
        tooltip: files.join("\n"),
        icon: "checkpoint",
        contextValue: "checkpoint",
        runId: e.run_id,
        checkpoint: e.checkpoint,
        children: [],
      };
    }
    case "feedback":
      return { id, label: "your feedback", description: firstLine(e.text), tooltip: e.text, icon: "feedback", children: [] };
    case "memory":
      return { id, label: `memory ${e.action ?? ""}`, description: `${e.count ?? 0}${e.detail ? ` · ${e.detail}` : ""}`, icon: "memory", children: [] };
    default:
      return { id, label: e.type, description: firstLine(JSON.stringify(e), 60), icon: "line", children: [] };
  }
}

/** A checkpoint a revert dropped: no "Accept Through Here"/"Revert to Here" (its number now
 * names the next checkpoint the run records). */
function revertedNode(id: string, e: TraceEvent): TraceNode {
  const files = e.files ?? [];
  return { id, label: `checkpoint ${e.checkpoint ?? "?"} (reverted)`, description: files.join(", "), tooltip: files.join("\n"), icon: "line", children: [] };
}

function turnNode(run: RunState, turn: TurnState, last: boolean): TraceNode {
  const id = `${run.id}/t${turn.turn}`;
  const children = turn.items.map((item, i): TraceNode => {
    const itemId = `${id}/${i}`;
    switch (item.kind) {
      case "thinking":
      case "text":
        return {
          id: itemId,
          label: item.kind === "thinking" ? "thinking" : "text",
          description: firstLine(item.text),
          tooltip: item.text,
          icon: item.kind,
          children: lines(itemId, item.text).length > 1 ? lines(itemId, item.text) : [],
        };
      case "tool":
        return toolNode(itemId, item);
      case "event":
        return run.reverted.has(item.event) ? revertedNode(itemId, item.event) : eventNode(itemId, item.event);
    }
  });
  const tools = turn.items.filter((i) => i.kind === "tool").length;
  const parts = [`${tools} tool call${tools === 1 ? "" : "s"}`];
  if (turn.finished !== undefined) {
    parts.push(formatTokens(turn.finished.usage?.total_tokens), formatCost(turn.finished.usage), formatDuration(turn.finished.duration_ms));
  } else if (run.status === "running") {
    parts.push("running…");
  }
  return { id, label: `Turn ${turn.turn}`, description: parts.filter((p) => p !== "").join(" · "), icon: "turn", children, expanded: last && run.status === "running" };
}

function outcomeIcon(outcome: string | undefined): NodeIcon {
  if (outcome === "answered") {
    return "ok";
  }
  if (outcome === "unverified" || outcome === "canceled" || outcome === "resource_cap") {
    return "warning";
  }
  return "error";
}

function councilNodes(run: RunState): TraceNode[] {
  const c = run.council;
  if (c === undefined) {
    return [];
  }
  const id = `${run.id}/council`;
  if (c.error !== undefined && c.error !== null) {
    return [{ id, label: "council: no verdict", description: c.error, icon: "warning", children: [] }];
  }
  const issues = (c.issues ?? []).map((issue, i) => ({
    id: `${id}/${i}`,
    label: issue.description ?? "",
    description: issue.severity,
    tooltip: issue.evidence,
    icon: "line" as const,
    children: [],
  }));
  const icon: NodeIcon = c.verdict === "approve" ? "ok" : c.verdict === "reject" ? "error" : "warning";
  return [{ id, label: `council: ${c.verdict ?? "?"}`, description: firstLine(c.summary), tooltip: c.summary, icon, children: issues }];
}

/** The elapsed time of a run: the result's duration, else the span of its events. */
export function runDuration(run: RunState): number | undefined {
  if (run.result?.duration_ms !== undefined) {
    return run.result.duration_ms + (run.base?.durationMs ?? 0);
  }
  if (run.startedAt !== undefined && run.updatedAt !== undefined) {
    return (run.updatedAt - run.startedAt) * 1000;
  }
  return undefined;
}

/** The tree of one run; `newest` keeps the latest run open after it finished. */
export function runNode(run: RunState, newest = false): TraceNode {
  const children: TraceNode[] = run.notes.map((e, i) => eventNode(`${run.id}/note${i}`, e));
  run.turns.forEach((t, i) => children.push(turnNode(run, t, i === run.turns.length - 1)));
  if (run.proposal !== undefined && run.proposal.length > 0) {
    children.push({
      id: `${run.id}/proposal`,
      label: "proposal",
      description: `${run.proposal.length} file${run.proposal.length === 1 ? "" : "s"}${run.proposalPending ? " · awaiting review" : ""}`,
      tooltip: run.rationale,
      icon: "proposal",
      expanded: run.proposalPending,
      contextValue: run.proposalPending ? "proposal.pending" : "proposal",
      runId: run.id,
      children: [...councilNodes(run), ...run.proposal.map((f) => ({
        id: `${run.id}/proposal/${f.path}`,
        label: f.path,
        description: `${f.action ?? "modify"}${f.conflict === true ? " · not applied: edited since the run" : ""}`,
        icon: "file" as const,
        contextValue: "proposalFile",
        runId: run.id,
        path: f.path,
        children: [],
      }))],
    });
  }
  const r = run.result;
  if (r !== undefined) {
    const verdict = `${r.outcome ?? "finished"}${r.verified === true ? " · verified" : ""}`;
    children.push({
      id: `${run.id}/outcome`,
      label: `outcome: ${verdict}`,
      description: [`${run.turns.length} turn${run.turns.length === 1 ? "" : "s"}`, formatTokens(run.usage.total_tokens), formatCost(run.usage), formatDuration(runDuration(run))].filter((p) => p !== "").join(" · "),
      tooltip: r.error ?? r.answer,
      icon: outcomeIcon(r.outcome),
      children: lines(`${run.id}/answer`, r.error ?? r.answer),
    });
  }
  const status =
    run.status === "running"
      ? `running · turn ${run.turns.length} · ${formatTokens(run.usage.total_tokens)}`
      : [r?.outcome ?? "finished", formatTokens(run.usage.total_tokens), formatCost(run.usage), formatDuration(runDuration(run))].filter((p) => p !== "").join(" · ");
  let context = run.status === "running" ? "run.running" : "run.finished";
  if (run.proposalPending) {
    context += ".proposal";
  }
  return {
    id: run.id,
    label: firstLine(run.task, 60) || run.id,
    description: status,
    tooltip: [run.task, run.model ? `${run.provider} ${run.model}` : "", `run ${run.id}`].filter((s) => s !== "").join("\n"),
    icon: run.status === "running" ? "running" : outcomeIcon(r?.outcome),
    children,
    expanded: newest || run.status === "running" || run.proposalPending,
    contextValue: context,
    runId: run.id,
  };
}
