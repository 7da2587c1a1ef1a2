import assert from "node:assert/strict";
import { test } from "node:test";

import { RunStore } from "../../src/runs";
import { playScriptedRun, scriptedRun } from "./fixtures";

test("test_run_store_folds_a_scripted_run", () => {
  const store = new RunStore();
  playScriptedRun(store);
  const run = store.get("r1");
  assert.ok(run !== undefined);
  assert.equal(run.status, "finished");
  assert.equal(run.task, "Fix the NameError in app.py");
  assert.deepEqual(
    run.turns.map((t) => t.items.map((i) => (i.kind === "tool" ? `tool:${i.call.name}:${i.result?.ok}` : i.kind === "event" ? i.event.type : `${i.kind}:${i.text}`))),
    [["thinking:The name is misspelled.", "tool:edit_file:true", "diagnostics"], ["text:Fixed the typo."]],
  );
  assert.equal(run.usage.total_tokens, 1200);
  assert.equal(run.proposalPending, true);
  assert.deepEqual(store.pendingProposals().map((r) => r.id), ["r1"]);
  assert.deepEqual(store.running(), []);
});

test("test_run_store_sums_turn_usage_while_running", () => {
  const store = new RunStore();
  for (const e of scriptedRun().slice(0, 11)) {
    store.apply("r1", e);
  }
  assert.equal(store.get("r1")?.usage.total_tokens, 1200);
  assert.equal(store.running().length, 1);
});

test("test_run_store_keeps_non_delta_text_separate", () => {
  const store = new RunStore();
  store.apply("r", { type: "text", run_id: "r", turn: 1, text: "a", delta: false });
  store.apply("r", { type: "text", run_id: "r", turn: 1, text: "b", delta: false });
  assert.equal(store.get("r")?.turns[0]?.items.length, 2);
});

test("test_run_store_resumes_after_feedback", () => {
  const store = new RunStore();
  playScriptedRun(store);
  // The resumed run starts over at turn 1 with the feedback as its task.
  store.apply("r1", { type: "run_started", run_id: "r1", task: "keep the old name" });
  const resumed = store.get("r1");
  assert.equal(resumed?.status, "running");
  assert.equal(resumed?.result, undefined);
  assert.equal(resumed?.proposalPending, false);
  store.apply("r1", { type: "turn_started", run_id: "r1", turn: 1 });
  store.apply("r1", { type: "text", run_id: "r1", turn: 1, text: "Done." });
  store.apply("r1", { type: "turn_finished", run_id: "r1", turn: 1, duration_ms: 10, usage: { total_tokens: 50 } });
  store.apply("r1", { type: "result", run_id: "r1", outcome: "answered", exit_code: 0, usage: { total_tokens: 50 }, duration_ms: 100 });
  const run = store.get("r1");
  assert.ok(run !== undefined);
  assert.equal(run.task, "Fix the NameError in app.py");
  assert.deepEqual(
    run.turns.map((t) => [t.turn, t.items.map((i) => (i.kind === "event" ? `${i.event.type}:${i.event.text}` : i.kind))]),
    [
      [1, ["thinking", "tool", "event"].map((k) => (k === "event" ? "diagnostics:undefined" : k))],
      [2, ["text"]],
      [3, ["feedback:keep the old name", "text"]],
    ],
  );
  assert.equal(run.usage.total_tokens, 1250);
  assert.equal(run.status, "finished");
});

test("test_run_store_keeps_the_servers_numbers_of_a_follow_up", () => {
  const store = new RunStore();
  playScriptedRun(store);
  // driveros-lsp numbers a follow-up's turns after the run's: turn 3 follows turns 1 and 2.
  store.apply("r1", { type: "run_started", run_id: "r1", task: "and the docs" });
  store.apply("r1", { type: "turn_started", run_id: "r1", turn: 3 });
  store.apply("r1", { type: "tool_call", run_id: "r1", turn: 3, call_id: "c9", name: "write_file", arguments: { path: "README.md" } });
  store.apply("r1", { type: "tool_result", run_id: "r1", turn: 3, call_id: "c9", name: "write_file", ok: true, output: "wrote" });
  store.apply("r1", { type: "checkpoint", run_id: "r1", turn: 3, checkpoint: 2, files: ["README.md"] });
  store.apply("r1", { type: "turn_finished", run_id: "r1", turn: 3, duration_ms: 10 });
  const run = store.get("r1");
  assert.ok(run !== undefined);
  assert.deepEqual(run.turns.map((t) => t.turn), [1, 2, 3]);
  const last = run.turns[2]?.items.map((i) => (i.kind === "event" ? `${i.event.type}:${i.event.checkpoint ?? i.event.text}` : i.kind));
  assert.deepEqual(last, ["feedback:and the docs", "tool", "checkpoint:2"]);
});

test("test_run_store_sync_follows_server_states", () => {
  const store = new RunStore();
  playScriptedRun(store);
  store.started("r2", "second");
  store.sync([
    { runId: "r1", state: "accepted", files: [] },
    { runId: "r2", state: "canceled" },
    { runId: "r3", task: "from another window", state: "running" },
  ]);
  assert.deepEqual(store.pendingProposals(), []);
  assert.deepEqual(store.running().map((r) => r.id), ["r3"]);
  assert.equal(store.get("r3")?.task, "from another window");
  assert.equal(store.get("r2")?.result?.outcome, "canceled");
});

test("test_run_store_marks_runs_canceled_when_server_stops", () => {
  const store = new RunStore();
  store.started("r9", "t");
  let fired = 0;
  store.onDidChange(() => (fired += 1));
  store.serverStopped();
  assert.equal(store.get("r9")?.result?.outcome, "canceled");
  assert.equal(fired, 1);
});

test("test_run_store_proposal_notification_carries_contents", () => {
  const store = new RunStore();
  store.proposal("r1", [{ path: "a.py", action: "modify", newText: "x = 1\n" }], "why");
  assert.equal(store.get("r1")?.proposal?.[0]?.newText, "x = 1\n");
  store.settled("r1");
  assert.equal(store.get("r1")?.proposalPending, false);
});

test("test_run_store_proposal_updates_end_the_review_but_keep_the_files", () => {
  const store = new RunStore();
  store.proposal("r1", [{ path: "a.py", action: "modify", diff: "d" }], "why", "proposed");
  assert.equal(store.get("r1")?.proposalPending, true);
  store.proposal("r1", [], "", "accepted");
  const run = store.get("r1");
  assert.equal(run?.proposalPending, false);
  assert.equal(run?.serverState, "accepted");
  assert.deepEqual(run?.proposal?.map((f) => f.path), ["a.py"]);
  assert.equal(run?.rationale, "why");
});

test("test_run_store_proposal_comes_only_from_the_notification", () => {
  const store = new RunStore();
  scriptedRun().forEach((e) => store.apply("r1", e));
  assert.equal(store.get("r1")?.proposal, undefined);
  assert.equal(store.get("r1")?.proposalPending, false);
  // a trace event of type proposal (servers before the one-shape change) is a plain note
  store.apply("r1", { type: "proposal", run_id: "r1" });
  assert.equal(store.get("r1")?.proposal, undefined);
  store.proposal("r1", [{ path: "a.py", action: "modify", newText: "x = 2\n", uri: "file:///w/a.py" }], "why", "proposed");
  assert.equal(store.get("r1")?.proposal?.[0]?.newText, "x = 2\n");
  assert.equal(store.get("r1")?.proposalPending, true);
});
