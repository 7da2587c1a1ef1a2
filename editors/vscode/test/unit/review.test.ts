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

test("test_proposal_content_is_the_sent_new_text_never_a_rebuilt_diff", async () => {
  const dir = workspace();
  writeFileSync(path.join(dir, "a.py"), "x = 1\n");
  const store = new RunStore();
  store.proposal("r1", [{ path: "a.py", action: "modify", newText: "x = 2\n", diff: "garbage" }]);
  const provider = new ProposalContentProvider(store);
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "a.py", "after")), "x = 2\n");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "a.py", "before")), "x = 1\n");
  provider.dispose();
});

test("test_proposal_content_without_new_text_shows_the_diff_and_why", async () => {
  workspace();
  const store = new RunStore();
  store.proposal("r1", [{ path: "big.txt", action: "modify", newText: null, diff: "@@ -1 +1 @@\n-a\n+b\n" }]);
  const provider = new ProposalContentProvider(store);
  const text = await provider.provideTextDocumentContent(proposalUri("r1", "big.txt", "after"));
  assert.match(text, /^\(the proposed content was not sent: the file is too large/);
  assert.match(text, /\+b/);
  assert.equal(await provider.provideTextDocumentContent(proposalUri("gone", "a.py", "after")), "(this proposal is no longer available)");
  provider.dispose();
});

test("test_proposal_content_reads_open_buffers_over_disk", async () => {
  const dir = workspace();
  writeFileSync(path.join(dir, "a.py"), "on disk\n");
  state.textDocuments = [{ uri: Uri.file(path.join(dir, "a.py")), getText: () => "in buffer\n" }];
  const store = new RunStore();
  store.proposal("r1", [{ path: "a.py", newText: "changed\n" }]);
  const provider = new ProposalContentProvider(store);
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "a.py", "before")), "in buffer\n");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "a.py", "after")), "changed\n");
  provider.dispose();
});

test("test_proposal_content_of_created_deleted_renamed_and_binary_files", async () => {
  const dir = workspace();
  writeFileSync(path.join(dir, "old.py"), "bye\n");
  writeFileSync(path.join(dir, "src.py"), "moved\n");
  const store = new RunStore();
  store.proposal("r1", [
    { path: "new.py", action: "create", newText: "hello\n", diff: "" },
    { path: "old.py", action: "delete", newText: null, diff: "" },
    { path: "dst.py", action: "rename", oldPath: "src.py", newText: "moved!\n", diff: "" },
    { path: "logo.png", action: "modify", binary: true, newText: null },
  ]);
  const provider = new ProposalContentProvider(store);
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "new.py", "after")), "hello\n");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "new.py", "before")), "");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "old.py", "after")), "");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "old.py", "before")), "bye\n");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "dst.py", "before")), "moved\n");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "dst.py", "after")), "moved!\n");
  assert.equal(await provider.provideTextDocumentContent(proposalUri("r1", "logo.png", "after")), "(binary file)");
  provider.dispose();
});

test("test_proposal_content_stays_stable_once_the_file_is_applied", async () => {
  const dir = workspace();
  const file = path.join(dir, "a.py");
  writeFileSync(file, "old\n");
  const store = new RunStore();
  store.proposal("r1", [{ path: "a.py", newText: "new\n", diff: "@@ -1 +1 @@\n-old\n+new\n" }]);
  const provider = new ProposalContentProvider(store);
  const uri = proposalUri("r1", "a.py", "after");
  assert.equal(await provider.provideTextDocumentContent(uri), "new\n");
  writeFileSync(file, "new\n");
  assert.equal(await provider.provideTextDocumentContent(uri), "new\n");
  provider.dispose();
});
