import assert from "node:assert/strict";
import { test } from "node:test";

import { RunStore } from "../../src/runs";
import { type TraceNode, runNode } from "../../src/traceModel";
import { playScriptedRun, scriptedRun } from "./fixtures";

/** label [description] and children, indented: a readable whole-tree snapshot. */
function outline(node: TraceNode, depth = 0, maxDepth = 2): string[] {
  const line = `${"  ".repeat(depth)}${node.label}${node.description !== undefined ? ` [${node.description}]` : ""}`;
  return depth >= maxDepth ? [line] : [line, ...node.children.flatMap((c) => outline(c, depth + 1, maxDepth))];
}

test("test_trace_tree_of_a_finished_run", () => {
  const store = new RunStore();
  playScriptedRun(store);
  const run = store.get("r1");
  assert.ok(run !== undefined);
  assert.deepEqual(outline(runNode(run)), [
    "Fix the NameError in app.py [answered · 1.2k tok · 2.1 s]",
    "  Turn 1 [1 tool call · 900 tok · 1.5 s]",
    "    thinking [The name is misspelled.]",
    "    edit_file app.py [ok · 12 ms]",
    "    diagnostics [0 total · 0 new · 1 fixed]",
    "  Turn 2 [0 tool calls · 300 tok · 500 ms]",
    "    text [Fixed the typo.]",
    "  proposal [1 file · awaiting review]",
    "    app.py [modify]",
    "  outcome: answered · verified [2 turns · 1.2k tok · 2.1 s]",
    "    Fixed the typo.",
  ]);
  assert.equal(runNode(run).contextValue, "run.finished.proposal");
  store.settled("r1");
  assert.equal(runNode(run).expanded, false);
  assert.equal(runNode(run, true).expanded, true);
});

test("test_trace_tree_tool_call_children_hold_arguments_and_result", () => {
  const store = new RunStore();
  playScriptedRun(store);
  const run = store.get("r1");
  assert.ok(run !== undefined);
  const tool = runNode(run).children[0]?.children[1];
  assert.ok(tool !== undefined);
  assert.deepEqual(
    tool.children.map((c) => [c.label, c.children.map((g) => g.label)]),
    [
      ["arguments", ["{", '  "path": "app.py",', '  "old_string": "pritn",', '  "new_string": "print"', "}"]],
      ["result", ["edited app.py"]],
    ],
  );
});

test("test_trace_tree_of_a_running_run_expands_the_last_turn", () => {
  const store = new RunStore();
  scriptedRun().slice(0, 5).forEach((e) => store.apply("r1", e));
  const run = store.get("r1");
  assert.ok(run !== undefined);
  const node = runNode(run);
  assert.equal(node.description, "running · turn 1 · 0 tok");
  assert.equal(node.contextValue, "run.running");
  assert.equal(node.expanded, true);
  assert.equal(node.children[0]?.expanded, true);
  assert.equal(node.children[0]?.children[1]?.description, "running…");
});

test("test_trace_tree_stuck_and_failed_tool", () => {
  const store = new RunStore();
  store.apply("r", { type: "tool_call", run_id: "r", turn: 1, call_id: "c", name: "run", arguments: { command: "make" } });
  store.apply("r", { type: "tool_result", run_id: "r", turn: 1, call_id: "c", name: "run", ok: false, output: "boom", duration_ms: 2500 });
  store.apply("r", { type: "stuck", run_id: "r", turn: 1, detector: "repeat", detail: "same call 3 times", evidence: ["run make"] });
  store.apply("r", { type: "result", run_id: "r", outcome: "stuck", exit_code: 4, turns: 1 });
  const run = store.get("r");
  assert.ok(run !== undefined);
  assert.deepEqual(outline(runNode(run), 0, 3), [
    "r [stuck · 0 tok · 0 ms]",
    "  Turn 1 [1 tool call]",
    "    run make [failed · 2.5 s]",
    "      arguments",
    "      result [boom]",
    "    stuck: repeat [same call 3 times]",
    "      run make",
    "  outcome: stuck [1 turn · 0 tok · 0 ms]",
  ]);
  assert.equal(runNode(run).icon, "error");
});

test("test_trace_tree_shows_the_council_verdict_under_the_proposal", () => {
  const store = new RunStore();
  playScriptedRun(store);
  store.proposal("r1", [{ path: "app.py", action: "modify" }], "typo", "proposed", {
    verdict: "revise",
    summary: "Fix is right; add a test.",
    issues: [{ severity: "minor", description: "no regression test", evidence: "tests/ unchanged" }],
  });
  store.proposal("r2", [{ path: "b.py", conflict: true }], "", "proposed", { error: "no second provider configured" });
  const r1 = store.get("r1");
  const r2 = store.get("r2");
  assert.ok(r1 !== undefined && r2 !== undefined);
  const proposal = runNode(r1).children.find((c) => c.label === "proposal");
  assert.ok(proposal !== undefined);
  assert.deepEqual(outline(proposal), [
    "proposal [1 file · awaiting review]",
    "  council: revise [Fix is right; add a test.]",
    "    no regression test [minor]",
    "  app.py [modify]",
  ]);
  assert.deepEqual(outline(runNode(r2).children[0] as TraceNode, 0, 1), ["proposal [1 file · awaiting review]", "  council: no verdict [no second provider configured]", "  b.py [modify · not applied: edited since the run]"]);
});

test("test_trace_tree_shows_what_a_run_cost_and_unknown_never_as_zero", () => {
  const store = new RunStore();
  store.apply("c", { type: "run_started", run_id: "c", task: "priced" });
  store.apply("c", { type: "turn_started", run_id: "c", turn: 1 });
  store.apply("c", { type: "turn_finished", run_id: "c", turn: 1, duration_ms: 10, usage: { total_tokens: 100, cost_usd: 0.0012 } });
  store.apply("c", { type: "turn_started", run_id: "c", turn: 2 });
  store.apply("c", { type: "turn_finished", run_id: "c", turn: 2, duration_ms: 10, usage: { total_tokens: 100, cost_usd: 0.0003 } });
  const priced = store.get("c");
  assert.ok(priced !== undefined);
  assert.deepEqual(outline(runNode(priced), 0, 1), [
    "priced [running · turn 2 · 200 tok]",
    "  Turn 1 [0 tool calls · 100 tok · $0.0012 · 10 ms]",
    "  Turn 2 [0 tool calls · 100 tok · $0.0003 · 10 ms]",
  ]);
  store.apply("c", { type: "result", run_id: "c", outcome: "answered", exit_code: 0, turns: 2, usage: { total_tokens: 200, cost_usd: 0.0015 }, duration_ms: 20 });
  assert.equal(outline(runNode(priced), 0, 0)[0], "priced [answered · 200 tok · $0.0015 · 20 ms]");

  store.apply("u", { type: "run_started", run_id: "u", task: "local model" });
  store.apply("u", { type: "turn_started", run_id: "u", turn: 1 });
  store.apply("u", { type: "turn_finished", run_id: "u", turn: 1, duration_ms: 10, usage: { total_tokens: 100, cost_usd: 0.001 } });
  store.apply("u", { type: "turn_started", run_id: "u", turn: 2 });
  store.apply("u", { type: "turn_finished", run_id: "u", turn: 2, duration_ms: 10, usage: { total_tokens: 100, cost_usd: null, cost_unknown: true } });
  store.apply("u", { type: "result", run_id: "u", outcome: "answered", exit_code: 0, turns: 2, usage: { total_tokens: 200, cost_usd: null, cost_unknown: true }, duration_ms: 20 });
  const unknown = store.get("u");
  assert.ok(unknown !== undefined);
  assert.equal(outline(runNode(unknown), 0, 0)[0], "local model [answered · 200 tok · cost unknown · 20 ms]");
});

test("test_trace_checkpoint_nodes_carry_the_run_and_number_for_accept_and_revert", () => {
  const store = new RunStore();
  store.apply("k", { type: "run_started", run_id: "k", task: "three steps" });
  store.apply("k", { type: "turn_started", run_id: "k", turn: 1 });
  store.apply("k", { type: "checkpoint", run_id: "k", turn: 1, checkpoint: 1, files: ["plan.txt"] });
  store.apply("k", { type: "turn_started", run_id: "k", turn: 2 });
  store.apply("k", { type: "checkpoint", run_id: "k", turn: 2, checkpoint: 2, files: ["calc.py", "util.py"] });
  const run = store.get("k");
  assert.ok(run !== undefined);
  const nodes = runNode(run).children.flatMap((turn) => turn.children);
  assert.deepEqual(
    nodes.map((n) => [n.label, n.description, n.contextValue, n.runId, n.checkpoint, n.icon]),
    [
      ["checkpoint 1", "plan.txt", "checkpoint", "k", 1, "checkpoint"],
      ["checkpoint 2", "calc.py, util.py", "checkpoint", "k", 2, "checkpoint"],
    ],
  );
});

test("test_trace_reverted_checkpoints_offer_no_action_and_their_number_goes_to_the_next", () => {
  const store = new RunStore();
  store.apply("k", { type: "run_started", run_id: "k", task: "three steps" });
  for (const n of [1, 2, 3]) {
    store.apply("k", { type: "turn_started", run_id: "k", turn: n });
    store.apply("k", { type: "checkpoint", run_id: "k", turn: n, checkpoint: n, files: [`f${n}.txt`] });
  }
  store.apply("k", { type: "result", run_id: "k", outcome: "answered", exit_code: 0, turns: 3 });
  store.reverted("k", 1);
  // a follow-up: its turns go on, its checkpoint takes the number 2 again
  store.apply("k", { type: "run_started", run_id: "k", task: "go on" });
  store.apply("k", { type: "turn_started", run_id: "k", turn: 4 });
  store.apply("k", { type: "checkpoint", run_id: "k", turn: 4, checkpoint: 2, files: ["g.txt"] });
  const run = store.get("k");
  assert.ok(run !== undefined);
  const nodes = runNode(run).children.flatMap((turn) => turn.children).filter((n) => n.label.startsWith("checkpoint"));
  assert.deepEqual(
    nodes.map((n) => [n.label, n.description, n.contextValue, n.checkpoint]),
    [
      ["checkpoint 1", "f1.txt", "checkpoint", 1],
      ["checkpoint 2 (reverted)", "f2.txt", undefined, undefined],
      ["checkpoint 3 (reverted)", "f3.txt", undefined, undefined],
      ["checkpoint 2", "g.txt", "checkpoint", 2],
    ],
  );
});
