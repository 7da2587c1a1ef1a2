import type { ProposalFileParams, TraceEvent } from "../../src/events";
import type { RunStore } from "../../src/runs";

/** A short scripted run as the server streams it: one tool turn, one answer turn (its proposal
 * is not in the trace: see scriptedProposal). */
export function scriptedRun(runId = "r1"): TraceEvent[] {
  const e = (seq: number, event: Omit<TraceEvent, "run_id" | "seq" | "ts">): TraceEvent => ({ run_id: runId, seq, ts: 1000 + seq, ...event });
  return [
    e(0, { type: "run_started", task: "Fix the NameError in app.py", provider: "openai", model: "gpt-test" }),
    e(1, { type: "turn_started", turn: 1 }),
    e(2, { type: "thinking", turn: 1, text: "The name is ", delta: true }),
    e(3, { type: "thinking", turn: 1, text: "misspelled.", delta: true }),
    e(4, { type: "tool_call", turn: 1, call_id: "c1", name: "edit_file", arguments: { path: "app.py", old_string: "pritn", new_string: "print" } }),
    e(5, { type: "tool_result", turn: 1, call_id: "c1", name: "edit_file", ok: true, output: "edited app.py", duration_ms: 12, observed: true }),
    e(6, {
      type: "diagnostics",
      turn: 1,
      total: 0,
      new: [],
      fixed: [{ path: "app.py", line: 2, message: "undefined name 'pritn'" }],
      unchanged: 0,
    }),
    e(7, { type: "turn_finished", turn: 1, duration_ms: 1500, usage: { total_tokens: 900, input_tokens: 800, output_tokens: 100 } }),
    e(8, { type: "turn_started", turn: 2 }),
    e(9, { type: "text", turn: 2, text: "Fixed the typo.", delta: true }),
    e(10, { type: "turn_finished", turn: 2, duration_ms: 500, usage: { total_tokens: 300 } }),
    e(11, { type: "result", outcome: "answered", exit_code: 0, answer: "Fixed the typo.", verified: true, turns: 2, usage: { total_tokens: 1200 }, duration_ms: 2100 }),
  ];
}

/** The `driveros/proposal` the server sends right after scriptedRun's result. */
export function scriptedProposal(): ProposalFileParams[] {
  return [{ path: "app.py", uri: "file:///w/app.py", action: "modify", oldPath: null, diff: "@@ -1 +1 @@\n-pritn('x')\n+print('x')\n", newText: "print('x')\n", binary: false, conflict: false }];
}

/** Fold scriptedRun and its proposal into `store`, as the client receives them. */
export function playScriptedRun(store: RunStore, runId = "r1"): void {
  scriptedRun(runId).forEach((e) => store.apply(runId, e));
  store.proposal(runId, scriptedProposal(), "typo", "proposed", null);
}
