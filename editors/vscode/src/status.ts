/** The status bar item: idle, N running, or the server's error state. */

import * as vscode from "vscode";

export type ServerState = "starting" | "ready" | "stopped" | "missing" | "error";

export interface StatusView {
  text: string;
  tooltip: string;
  error: boolean;
}

/** What the item shows; pure so the wording is unit-tested. */
export function statusView(state: ServerState, running: number, pending: number, detail?: string): StatusView {
  switch (state) {
    case "starting":
      return { text: "$(loading~spin) DriverOS", tooltip: "driveros-lsp is starting", error: false };
    case "missing":
      return { text: "$(error) DriverOS", tooltip: detail ?? "driveros-lsp was not found", error: true };
    case "error":
      return { text: "$(error) DriverOS", tooltip: detail ?? "driveros-lsp failed", error: true };
    case "stopped":
      return { text: "$(debug-disconnect) DriverOS", tooltip: detail ?? "driveros-lsp is not running", error: true };
    case "ready":
      break;
  }
  const review = pending > 0 ? ` · ${pending} to review` : "";
  if (running > 0) {
    return { text: `$(sync~spin) DriverOS: ${running} running${review}`, tooltip: "Show the runs", error: false };
  }
  return { text: `$(hubot) DriverOS${review}`, tooltip: pending > 0 ? "Review the pending proposals" : "DriverOS is idle: show the runs", error: false };
}

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private state: ServerState = "starting";
  private detail: string | undefined;

  constructor(private readonly counts: () => { running: number; pending: number }) {
    this.item = vscode.window.createStatusBarItem("driveros.status", vscode.StatusBarAlignment.Left, 10);
    this.item.name = "DriverOS";
    this.item.command = "driveros.showRuns";
    this.render();
    this.item.show();
  }

  set(state: ServerState, detail?: string): void {
    this.state = state;
    this.detail = detail;
    this.render();
  }

  render(): void {
    const { running, pending } = this.counts();
    const view = statusView(this.state, running, pending, this.detail);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.error ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
