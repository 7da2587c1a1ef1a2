import assert from "node:assert/strict";
import { test } from "node:test";

import { type CommandContext, registerCommands } from "../../src/commands";
import { CMD_AGENT_COMMAND } from "../../src/protocol";
import { RunStore } from "../../src/runs";
import { state } from "./vscodeStub";

function context(answers: unknown[], calls: [string, unknown][]): CommandContext {
  const client = {
    execute: async (command: string, arg: unknown): Promise<unknown> => {
      calls.push([command, arg]);
      return answers.shift();
    },
  };
  const tree = { runRoot: (id: string): object => ({ runId: id }) };
  const view = { reveal: async (): Promise<void> => undefined };
  const log = { info: (): void => undefined, warn: (): void => undefined };
  return { client, store: new RunStore(), tree, view, log } as unknown as CommandContext;
}

test("test_run_custom_command_picks_from_the_servers_list_and_starts_it", async () => {
  const calls: [string, unknown][] = [];
  const ctx = context(
    [
      { runId: null, commands: [{ name: "explain", description: "Explain a file", argumentHint: "PATH", source: "user" }] },
      { runId: "r1", commands: [] },
    ],
    calls,
  );
  const shown: unknown[][] = [];
  state.quickPickAnswer = (items) => {
    shown.push(items);
    return items[0];
  };
  state.inputAnswer = () => "calc.py";
  const disposables = registerCommands(ctx);
  try {
    await state.commands.get("driveros.runCommand")?.();
  } finally {
    for (const d of disposables) {
      d.dispose();
    }
    state.quickPickAnswer = undefined;
    state.inputAnswer = undefined;
  }
  assert.deepEqual(calls, [
    [CMD_AGENT_COMMAND, {}],
    [CMD_AGENT_COMMAND, { name: "explain", arguments: "calc.py" }],
  ]);
  const label = (shown[0]?.[0] as { label: string; description: string }) ?? { label: "", description: "" };
  assert.equal(label.label, "/explain");
  assert.equal(label.description, "Explain a file");
  assert.equal(ctx.store.get("r1")?.task, "/explain calc.py");
});

test("test_run_custom_command_without_commands_says_where_to_add_one", async () => {
  const calls: [string, unknown][] = [];
  const ctx = context([{ runId: null, commands: [] }], calls);
  state.messages.length = 0;
  const disposables = registerCommands(ctx);
  try {
    await state.commands.get("driveros.runCommand")?.();
  } finally {
    for (const d of disposables) {
      d.dispose();
    }
  }
  assert.equal(calls.length, 1);
  assert.ok(state.messages.some((m) => m.includes(".config/driveros/commands")));
});
