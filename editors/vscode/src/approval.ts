/**
 * Approval "ask": the server asks with a standard window/showMessageRequest (docs/lsp-runs.md,
 * Approval). A driveros question (message starting with ASK_MESSAGE_PREFIX, actions exactly
 * ASK_ACTIONS) is shown as a modal dialog with the command in a code block; any other request
 * gets the language client's usual message. Closing the dialog answers null: Deny.
 */

import * as vscode from "vscode";

import { ASK_ACTIONS, ASK_DENY, ASK_MESSAGE_PREFIX } from "./protocol";

export interface MessageRequest {
  type: number;
  message: string;
  actions?: { title: string }[] | null;
}

export interface Question {
  /** The tool that wants to act (`run`, or a check that runs a command). */
  tool: string;
  /** The whole command (or path), control characters already escaped by the server. */
  command: string;
  /** Where it runs: `local (this machine, as you), scratch copy`, `docker runsc, …`. */
  tier: string;
  /** Why the policy did not allow it on its own. */
  reason: string;
}

/** The question in a driveros approval request, or undefined for any other request. */
export function parseQuestion(params: MessageRequest): Question | undefined {
  const titles = (params.actions ?? []).map((a) => a.title);
  if (!params.message.startsWith(ASK_MESSAGE_PREFIX) || titles.join("\n") !== ASK_ACTIONS.join("\n")) {
    return undefined;
  }
  const lines = params.message.split("\n");
  const field = (name: string): string => {
    const line = lines.find((l) => l.startsWith(`${name}: `));
    return line === undefined ? "" : line.slice(name.length + 2);
  };
  const tool = field("tool");
  const first = (lines[0] ?? "").slice(ASK_MESSAGE_PREFIX.length);
  let command = first;
  for (const verb of ["run", `${tool} (runs)`, tool]) {
    if (verb !== "" && first.startsWith(`${verb}: `)) {
      command = first.slice(verb.length + 2);
      break;
    }
  }
  return { tool, command, tier: field("runs in"), reason: field("why asked") };
}

/** The modal's detail: the command in a fenced code block, then the tool, tier and reason. */
export function questionDetail(q: Question): string {
  const fence = q.command.includes("```") ? "````" : "```";
  const lines = [fence, q.command, fence, "", `Tool: ${q.tool}`, `Runs in: ${q.tier}`];
  if (q.reason !== "") {
    lines.push(`Why asked: ${q.reason}`);
  }
  return lines.join("\n");
}

type Show = (message: string, ...items: { title: string }[]) => Thenable<{ title: string } | undefined>;

function standardShow(type: number): Show {
  switch (type) {
    case 1:
      return vscode.window.showErrorMessage;
    case 2:
      return vscode.window.showWarningMessage;
    default:
      return vscode.window.showInformationMessage;
  }
}

/** Handler for window/showMessageRequest (every request of the driveros client). */
export async function answerMessageRequest(params: MessageRequest): Promise<{ title: string } | null> {
  const actions = params.actions ?? [];
  const question = parseQuestion(params);
  if (question === undefined) {
    return (await standardShow(params.type)(params.message, ...actions)) ?? null;
  }
  const title = question.tool === "run" ? "DriverOS wants to run a command" : `DriverOS wants to use ${question.tool}`;
  // The first button is the dialog's default (Enter): make that Deny, never an allowance.
  const buttons = [...actions.filter((a) => a.title === ASK_DENY), ...actions.filter((a) => a.title !== ASK_DENY)];
  const chosen = await vscode.window.showWarningMessage(title, { modal: true, detail: questionDetail(question) }, ...buttons);
  return chosen ?? null;
}
