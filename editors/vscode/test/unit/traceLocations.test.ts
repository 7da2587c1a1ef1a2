import assert from "node:assert/strict";
import { test } from "node:test";

import * as vscode from "vscode";

import type { TraceLocation } from "../../src/events";
import { RunStore } from "../../src/runs";
import { runNode } from "../../src/traceModel";
import { TraceTreeProvider } from "../../src/traceView";
import { state } from "./vscodeStub";

const ROOT = "/home/u/proj";

function at(rel: string, line: number, character: number, length: number): TraceLocation {
  return { uri: `file://${ROOT}/${rel}`, range: { start: { line, character }, end: { line, character: character + length } } };
}

function semanticRun(store: RunStore): TraceLocation[] {
  const places = [at("pkg/calc.py", 0, 4, 13), at("pkg/use.py", 4, 33, 13)];
  store.apply("s", { type: "run_started", run_id: "s", task: "find" });
  store.apply("s", { type: "turn_started", run_id: "s", turn: 1 });
  store.apply("s", { type: "tool_call", run_id: "s", turn: 1, call_id: "c", name: "references", arguments: { symbol: "compute_total" } });
  store.apply("s", { type: "tool_result", run_id: "s", turn: 1, call_id: "c", name: "references", ok: true, output: "2 references" }, places);
  return places;
}

test("test_trace_semantic_tool_locations_are_nodes_under_the_call", () => {
  const store = new RunStore();
  const places = semanticRun(store);
  const run = store.get("s");
  assert.ok(run !== undefined);
  const [call] = runNode(run).children[0]?.children ?? [];
  assert.ok(call !== undefined);
  const located = call.children.filter((n) => n.location !== undefined);
  assert.deepEqual(
    located.map((n) => [n.label, n.icon, n.location]),
    [
      [`${ROOT}/pkg/calc.py:1:5`, "location", places[0]],
      [`${ROOT}/pkg/use.py:5:34`, "location", places[1]],
    ],
  );
});

test("test_trace_location_node_is_a_command_link_opening_the_file_at_the_range", () => {
  const store = new RunStore();
  semanticRun(store);
  const view = new TraceTreeProvider(store);
  state.workspaceFolders = [{ uri: vscode.Uri.file(ROOT), name: "proj", index: 0 }];
  try {
    const [runRoot] = view.getChildren();
    assert.ok(runRoot !== undefined);
    const call = view.getChildren(view.getChildren(runRoot)[0])[0];
    assert.ok(call !== undefined);
    const node = view.getChildren(call).find((n) => n.label === `${ROOT}/pkg/use.py:5:34`);
    assert.ok(node !== undefined);
    const item = view.getTreeItem(node);
    assert.equal(item.label, "pkg/use.py:5:34"); // relative to the workspace folder
    assert.equal(item.command?.command, "vscode.open");
    const [uri, options] = item.command?.arguments ?? [];
    assert.ok(uri instanceof vscode.Uri);
    assert.equal(uri.scheme, "file");
    assert.equal(uri.fsPath, `${ROOT}/pkg/use.py`);
    const { selection } = options as { selection: vscode.Range };
    assert.deepEqual(
      [selection.start.line, selection.start.character, selection.end.line, selection.end.character],
      [4, 33, 4, 46],
    );
    // a node without a location opens nothing
    assert.equal(view.getTreeItem(call).command, undefined);
  } finally {
    state.workspaceFolders = [];
    view.dispose();
  }
});

test("test_trace_without_locations_lists_none", () => {
  const store = new RunStore();
  store.apply("r", { type: "tool_call", run_id: "r", turn: 1, call_id: "c", name: "read_file", arguments: { path: "a.py" } });
  store.apply("r", { type: "tool_result", run_id: "r", turn: 1, call_id: "c", name: "read_file", ok: true, output: "x" });
  const run = store.get("r");
  assert.ok(run !== undefined);
  const call = runNode(run).children[0]?.children[0];
  assert.deepEqual(call?.children.map((n) => n.label), ["arguments", "result"]);
});

test("test_trace_keeps_only_well_formed_file_locations", () => {
  // the payload is the server's, but a click runs `vscode.open` on it: as the Neovim client
  // does, only `file:` Locations with a numeric range become links
  const store = new RunStore();
  const good = at("pkg/calc.py", 0, 4, 13);
  const odd = [
    { uri: "command:workbench.action.terminal.new", range: good.range },
    { uri: "https://example.invalid/x.py", range: good.range },
    { uri: `file://${ROOT}/pkg/no_range.py` },
    { uri: `file://${ROOT}/pkg/bad_range.py`, range: { start: { line: "1", character: 0 }, end: good.range.end } },
    "file:///not/an/object.py",
  ] as unknown as TraceLocation[];
  store.apply("o", { type: "tool_call", run_id: "o", turn: 1, call_id: "c", name: "references", arguments: {} });
  store.apply("o", { type: "tool_result", run_id: "o", turn: 1, call_id: "c", name: "references", ok: true, output: "" }, [...odd, good]);
  const run = store.get("o");
  assert.ok(run !== undefined);
  const call = runNode(run).children[0]?.children[0];
  assert.deepEqual(
    call?.children.filter((n) => n.location !== undefined).map((n) => n.location),
    [good],
  );
});
