/** The live trace: a tree view in the panel rendering each run from the RunStore. */

import * as vscode from "vscode";

import type { TraceLocation } from "./events";
import type { RunStore } from "./runs";
import { type NodeIcon, type TraceNode, locationLabel, runNode } from "./traceModel";

const ICONS: Record<NodeIcon, [string, string?]> = {
  run: ["hubot"],
  running: ["loading~spin"],
  ok: ["pass", "testing.iconPassed"],
  warning: ["warning", "list.warningForeground"],
  error: ["error", "list.errorForeground"],
  turn: ["comment-discussion"],
  thinking: ["lightbulb"],
  text: ["comment"],
  tool: ["tools"],
  diagnostics: ["checklist"],
  added: ["diff-added", "gitDecoration.addedResourceForeground"],
  removed: ["diff-removed", "gitDecoration.deletedResourceForeground"],
  memory: ["database"],
  approval: ["shield"],
  stuck: ["debug-pause", "list.warningForeground"],
  feedback: ["feedback"],
  edit: ["edit"],
  checkpoint: ["milestone"],
  proposal: ["git-pull-request"],
  file: ["file"],
  location: ["location"],
  line: [""],
};

export const TRACE_VIEW_ID = "driveros.trace";

/** The command that opens a location's file with its range selected (a click on the node). */
export function openLocation(loc: TraceLocation): vscode.Command {
  const { start, end } = loc.range;
  const selection = new vscode.Range(start.line, start.character, end.line, end.character);
  return { command: "vscode.open", title: "Open", arguments: [vscode.Uri.parse(loc.uri), { selection, preview: true }] };
}

export class TraceTreeProvider implements vscode.TreeDataProvider<TraceNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TraceNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly parents = new Map<string, TraceNode | undefined>();
  private roots: TraceNode[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly subscription: { dispose(): void };

  constructor(private readonly store: RunStore) {
    this.rebuild();
    // Events stream fast; redraw at most every 100 ms.
    this.subscription = store.onDidChange(() => {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.rebuild();
        this.changed.fire(undefined);
      }, 100);
    });
  }

  private rebuild(): void {
    // Keep one object per node id across rebuilds: VS Code's tree maps elements to its own
    // handles by identity, so reveal() and expansion need the objects it has already seen.
    const previous = new Map<string, TraceNode>();
    const index = (node: TraceNode): void => {
      previous.set(node.id, node);
      node.children.forEach(index);
    };
    this.roots.forEach(index);
    const stable = (fresh: TraceNode): TraceNode => {
      const children = fresh.children.map(stable);
      const old = previous.get(fresh.id);
      if (old === undefined) {
        return { ...fresh, children };
      }
      for (const key of Object.keys(old) as (keyof TraceNode)[]) {
        delete old[key];
      }
      return Object.assign(old, fresh, { children });
    };
    this.roots = this.store.all().map((run, i) => stable(runNode(run, i === 0)));
    this.parents.clear();
    const walk = (node: TraceNode, parent: TraceNode | undefined): void => {
      this.parents.set(node.id, parent);
      node.children.forEach((c) => walk(c, node));
    };
    this.roots.forEach((r) => walk(r, undefined));
  }

  /** The current root node of a run (for TreeView.reveal). */
  runRoot(runId: string): TraceNode | undefined {
    return this.roots.find((r) => r.runId === runId);
  }

  getChildren(node?: TraceNode): TraceNode[] {
    return node === undefined ? this.roots : node.children;
  }

  getParent(node: TraceNode): TraceNode | undefined {
    return this.parents.get(node.id);
  }

  getTreeItem(node: TraceNode): vscode.TreeItem {
    let state = vscode.TreeItemCollapsibleState.None;
    // A run is always collapsible: rendered once without children (just started), VS Code would
    // otherwise keep it collapsed when its turns arrive.
    if (node.children.length > 0 || node.contextValue?.startsWith("run.") === true) {
      state = node.expanded === true ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed;
    }
    // a location is labelled by its path in the workspace (its node holds the absolute one)
    const label = node.location !== undefined ? locationLabel(node.location, (uri) => vscode.workspace.asRelativePath(vscode.Uri.parse(uri), false)) : node.label;
    const item = new vscode.TreeItem(label, state);
    item.id = node.id;
    item.description = node.description;
    if (node.tooltip !== undefined && node.tooltip !== "") {
      const md = new vscode.MarkdownString();
      md.appendCodeblock(node.tooltip.length > 4000 ? `${node.tooltip.slice(0, 4000)}\n…` : node.tooltip, "text");
      item.tooltip = md;
    }
    const [icon, color] = ICONS[node.icon];
    if (icon !== "") {
      item.iconPath = new vscode.ThemeIcon(icon, color !== undefined ? new vscode.ThemeColor(color) : undefined);
    }
    item.contextValue = node.contextValue;
    if (node.contextValue === "proposalFile" && node.runId !== undefined && node.path !== undefined) {
      item.command = { command: "driveros.showProposalDiff", title: "Show Diff", arguments: [node] };
    }
    if (node.location !== undefined) {
      item.command = openLocation(node.location);
    }
    return item;
  }

  dispose(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    this.subscription.dispose();
    this.changed.dispose();
  }
}
