import assert from "node:assert/strict";
import { test } from "node:test";

import { StatusBar, statusView } from "../../src/status";
import { state } from "./vscodeStub";

test("test_status_view_wording", () => {
  assert.deepEqual(
    [statusView("ready", 0, 0).text, statusView("ready", 2, 0).text, statusView("ready", 0, 1).text, statusView("missing", 0, 0, "not found").tooltip],
    ["$(hubot) DriverOS", "$(sync~spin) DriverOS: 2 running", "$(hubot) DriverOS · 1 to review", "not found"],
  );
  assert.equal(statusView("error", 0, 0).error, true);
  assert.equal(statusView("ready", 3, 0).error, false);
});

test("test_status_bar_item_follows_counts_and_state", () => {
  let running = 0;
  const bar = new StatusBar(() => ({ running, pending: 0 }));
  const item = state.statusItems[state.statusItems.length - 1];
  assert.ok(item !== undefined);
  assert.equal(item.visible, true);
  assert.equal(item.command, "driveros.showRuns");
  bar.set("ready");
  running = 1;
  bar.render();
  assert.equal(item.text, "$(sync~spin) DriverOS: 1 running");
  bar.set("error", "crashed");
  assert.equal(item.tooltip, "crashed");
  assert.notEqual(item.backgroundColor, undefined);
  bar.dispose();
  assert.equal(item.visible, false);
});
