import assert from "node:assert/strict";
import { test } from "node:test";

import { PatchError, applyUnifiedDiff } from "../../src/patch";

const before = "a\nb\nc\nd\ne\nf\ng\nh\n";

test("test_apply_unified_diff_modifies_two_hunks", () => {
  const diff = ["--- a/x.py", "+++ b/x.py", "@@ -1,3 +1,3 @@", " a", "-b", "+B", " c", "@@ -6,3 +6,4 @@", " f", " g", "+g2", " h", ""].join("\n");
  assert.equal(applyUnifiedDiff(before, diff), "a\nB\nc\nd\ne\nf\ng\ng2\nh\n");
});

test("test_apply_unified_diff_creates_file", () => {
  const diff = ["--- /dev/null", "+++ b/new.py", "@@ -0,0 +1,2 @@", "+x = 1", "+y = 2", ""].join("\n");
  assert.equal(applyUnifiedDiff("", diff), "x = 1\ny = 2\n");
});

test("test_apply_unified_diff_deletes_everything", () => {
  const diff = ["@@ -1,2 +0,0 @@", "-x", "-y", ""].join("\n");
  assert.equal(applyUnifiedDiff("x\ny\n", diff), "");
});

test("test_apply_unified_diff_keeps_missing_final_newline", () => {
  const diff = ["@@ -1 +1 @@", "-x", "\\ No newline at end of file", "+z", "\\ No newline at end of file"].join("\n");
  assert.equal(applyUnifiedDiff("x", diff), "z");
});

test("test_apply_unified_diff_refuses_a_stale_base", () => {
  const diff = ["@@ -1,2 +1,2 @@", " a", "-zzz", "+q", ""].join("\n");
  assert.throws(() => applyUnifiedDiff(before, diff), PatchError);
});

test("test_apply_unified_diff_without_hunks_is_identity", () => {
  assert.equal(applyUnifiedDiff(before, ""), before);
});
