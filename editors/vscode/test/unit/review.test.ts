import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { ProposalContentProvider, parseProposalUri, proposalUri } from "../../src/review";
import { RunStore } from "../../src/runs";
import { Uri, state } from "./vscodeStub";

function workspace(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "driveros-review-"));
  state.workspaceFolders = [{ uri: Uri.file(dir), name: "ws", index: 0 }];
  state.textDocuments = [];
  return dir;
}

test("test_proposal_uri_round_trips", () => {
  const uri = proposalUri("abc123", "src/app.py", "after");
  assert.equal(uri.scheme, "driveros-proposal");
  assert.deepEqual(parseProposalUri(uri), { runId: "abc123", path: "src/app.py", side: "after" });
});

test("test_proposal_content_prefers_the_sent_sandbox_version", async () => {
  workspace();
  const store = new RunStore();
  store.proposal("r1", [{ path: "a.py", action: "modify", after: "x = 2\n", diff: "garbage" }]);
  const provider = new ProposalContentProvider(store);
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "a.py", "after")), "x = 2\n");
  provider.dispose();
});

test("test_proposal_content_rebuilds_from_diff_and_disk", async () => {
  const dir = workspace();
  writeFileSync(path.join(dir, "a.py"), "pritn('x')\nok = 1\n");
  const store = new RunStore();
  store.proposal("r1", [{ path: "a.py", action: "modify", diff: "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-pritn('x')\n+print('x')\n ok = 1\n" }]);
  const provider = new ProposalContentProvider(store);
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "a.py", "after")), "print('x')\nok = 1\n");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "a.py", "before")), "pritn('x')\nok = 1\n");
  provider.dispose();
});

test("test_proposal_content_reads_open_buffers_over_disk", async () => {
  const dir = workspace();
  writeFileSync(path.join(dir, "a.py"), "on disk\n");
  state.textDocuments = [{ uri: Uri.file(path.join(dir, "a.py")), getText: () => "in buffer\n" }];
  const store = new RunStore();
  store.proposal("r1", [{ path: "a.py", diff: "@@ -1 +1 @@\n-in buffer\n+changed\n" }]);
  const provider = new ProposalContentProvider(store);
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "a.py", "after")), "changed\n");
  provider.dispose();
});

test("test_proposal_content_explains_a_diff_that_no_longer_applies", async () => {
  const dir = workspace();
  writeFileSync(path.join(dir, "a.py"), "something else\n");
  const store = new RunStore();
  store.proposal("r1", [{ path: "a.py", diff: "@@ -1 +1 @@\n-old\n+new\n" }]);
  const provider = new ProposalContentProvider(store);
  const text = await provider.provideTextDocumentContent(proposalUri("r1", "a.py", "after"));
  assert.match(text, /^\(cannot rebuild the proposed version: line 1 does not match/);
  assert.equal(await provider.provideTextDocumentContent(proposalUri("gone", "a.py", "after")), "(this proposal is no longer available)");
  provider.dispose();
});

test("test_proposal_content_of_created_and_deleted_files", async () => {
  workspace();
  const store = new RunStore();
  store.proposal("r1", [
    { path: "new.py", action: "create", diff: "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+hello\n" },
    { path: "old.py", action: "delete", diff: "" },
  ]);
  const provider = new ProposalContentProvider(store);
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "new.py", "after")), "hello\n");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "new.py", "before")), "");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "old.py", "after")), "");
  provider.dispose();
});

test("test_proposal_content_stays_stable_once_the_file_is_applied", async () => {
  const dir = workspace();
  const file = path.join(dir, "a.py");
  writeFileSync(file, "old\n");
  const store = new RunStore();
  store.proposal("r1", [{ path: "a.py", diff: "@@ -1 +1 @@\n-old\n+new\n" }]);
  const provider = new ProposalContentProvider(store);
  const uri = proposalUri("r1", "a.py", "after");
  assert.equal(await provider.provideTextDocumentContent(uri), "new\n");
  writeFileSync(file, "new\n");
  assert.equal(await provider.provideTextDocumentContent(uri), "new\n");
  provider.dispose();
});
