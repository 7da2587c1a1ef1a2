import assert from "node:assert/strict";
import { test } from "node:test";

import { answerMessageRequest, parseQuestion, questionDetail } from "../../src/approval";
import { ASK_ACTIONS } from "../../src/protocol";
import { state } from "./vscodeStub";

const ACTIONS = ASK_ACTIONS.map((title) => ({ title }));
const MESSAGE = "driveros wants to run: python3 probe.py\\n# \\x1b[2J\ntool: run\nruns in: local (this machine, as you), scratch copy\nwhy asked: not on the allowlist";

test("test_parse_question_reads_the_servers_message", () => {
  assert.deepEqual(parseQuestion({ type: 2, message: MESSAGE, actions: ACTIONS }), {
    tool: "run",
    command: "python3 probe.py\\n# \\x1b[2J",
    tier: "local (this machine, as you), scratch copy",
    reason: "not on the allowlist",
  });
  const check = "driveros wants to mycheck (runs): make lint\ntool: mycheck\nruns in: docker runc, network on, scratch copy";
  assert.equal(parseQuestion({ type: 2, message: check, actions: ACTIONS })?.command, "make lint");
});

test("test_parse_question_ignores_other_requests", () => {
  assert.equal(parseQuestion({ type: 2, message: "Restart the server?", actions: [{ title: "Yes" }] }), undefined);
  assert.equal(parseQuestion({ type: 2, message: MESSAGE, actions: [{ title: "Allow once" }, { title: "Deny" }] }), undefined);
  assert.equal(parseQuestion({ type: 2, message: MESSAGE, actions: null }), undefined);
});

test("test_question_detail_fences_the_command", () => {
  const detail = questionDetail({ tool: "run", command: "echo ```", tier: "local", reason: "" });
  assert.equal(detail, "````\necho ```\n````\n\nTool: run\nRuns in: local");
});

test("test_answer_is_the_modal_choice_and_null_when_closed", async () => {
  const shown: unknown[][] = [];
  state.messageAnswer = (args) => {
    shown.push(args);
    return args[args.length - 1];
  };
  const chosen = await answerMessageRequest({ type: 2, message: MESSAGE, actions: ACTIONS });
  assert.deepEqual(chosen, { title: "Allow for this run" });
  const [title, options, ...buttons] = shown[0] as [string, { modal: boolean; detail: string }, ...{ title: string }[]];
  assert.deepEqual(buttons.map((b) => b.title), ["Deny", "Allow once", "Allow for this run"]); // Deny is the default
  assert.equal(title, "DriverOS wants to run a command");
  assert.equal(options.modal, true);
  assert.match(options.detail, /^```\npython3 probe\.py\\n# \\x1b\[2J\n```/);
  state.messageAnswer = () => undefined;
  assert.equal(await answerMessageRequest({ type: 2, message: MESSAGE, actions: ACTIONS }), null);
  // another server's question: the plain message with its own actions
  state.messageAnswer = (args) => args[1];
  assert.deepEqual(await answerMessageRequest({ type: 3, message: "Reload?", actions: [{ title: "Yes" }] }), { title: "Yes" });
  state.messageAnswer = undefined;
});
