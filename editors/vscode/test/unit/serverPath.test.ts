import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { compareVersions, resolveServer, serverTooOld } from "../../src/serverPath";

function executable(file: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, "#!/bin/sh\n");
  chmodSync(file, 0o755);
  return file;
}

function layout(): { root: string; ws: string; venvExe: string; pathDir: string; pathExe: string } {
  const root = mkdtempSync(path.join(tmpdir(), "driveros-serverpath-"));
  const ws = path.join(root, "ws");
  const venvExe = executable(path.join(ws, ".venv", "bin", "driveros-lsp"));
  const pathDir = path.join(root, "bin");
  const pathExe = executable(path.join(pathDir, "driveros-lsp"));
  return { root, ws, venvExe, pathDir, pathExe };
}

test("test_resolve_server_prefers_setting_then_venv_then_path", () => {
  const l = layout();
  const custom = executable(path.join(l.root, "custom", "driveros-lsp"));
  const base = { workspaceFolders: [l.ws], envPath: `/nonexistent${path.delimiter}${l.pathDir}`, home: l.root, workspaceTrusted: true, platform: "linux" as const };
  assert.deepEqual(resolveServer({ ...base, configured: custom }), { command: custom, source: "setting" });
  assert.deepEqual(resolveServer({ ...base, configured: "~/custom/driveros-lsp" }), { command: custom, source: "setting" });
  assert.deepEqual(resolveServer({ ...base, configured: "" }), { command: l.venvExe, source: "workspace .venv" });
  assert.deepEqual(resolveServer({ ...base, configured: "", workspaceFolders: [l.root] }), { command: l.pathExe, source: "PATH" });
});

test("test_resolve_server_never_runs_an_untrusted_workspace_venv", () => {
  const l = layout();
  const base = { configured: "", workspaceFolders: [l.ws], home: l.root, workspaceTrusted: false, platform: "linux" as const };
  assert.deepEqual(resolveServer({ ...base, envPath: l.pathDir }), { command: l.pathExe, source: "PATH" });
  const got = resolveServer({ ...base, envPath: "" });
  assert.ok("error" in got && got.error.includes("not trusted") && got.error.includes(l.venvExe), JSON.stringify(got));
});

test("test_resolve_server_expands_workspace_folder_and_relative_paths", () => {
  const l = layout();
  const base = { workspaceFolders: [l.ws], envPath: "", home: l.root, workspaceTrusted: true, platform: "linux" as const };
  assert.deepEqual(resolveServer({ ...base, configured: "${workspaceFolder}/.venv/bin/driveros-lsp" }), { command: l.venvExe, source: "setting" });
  assert.deepEqual(resolveServer({ ...base, configured: ".venv/bin/driveros-lsp" }), { command: l.venvExe, source: "setting" });
});

test("test_resolve_server_reports_a_bad_setting_instead_of_falling_back", () => {
  const l = layout();
  const plain = path.join(l.root, "not-executable");
  writeFileSync(plain, "");
  const got = resolveServer({ configured: plain, workspaceFolders: [l.ws], envPath: l.pathDir, home: l.root, workspaceTrusted: true });
  assert.ok("error" in got && got.error.includes("not an executable"), JSON.stringify(got));
});

test("test_resolve_server_reports_missing_server", () => {
  const root = mkdtempSync(path.join(tmpdir(), "driveros-serverpath-"));
  const got = resolveServer({ configured: "", workspaceFolders: [root], envPath: root, home: root, workspaceTrusted: true });
  assert.deepEqual(got, { error: "driveros-lsp was not found in the workspace .venv or on PATH." });
});

test("test_compare_versions_is_numeric", () => {
  assert.ok(compareVersions("0.10.0", "0.9.1") > 0);
  assert.equal(compareVersions("1.2.0", "1.2"), 0);
  assert.ok(compareVersions("0.1.0.dev3", "0.2.0") < 0);
});

test("test_server_too_old_by_version_or_missing_commands", () => {
  const required = ["driveros.agent.start", "driveros.agent.fix"];
  assert.equal(serverTooOld("0.1.0", required, required), undefined);
  assert.match(serverTooOld("0.0.9", required, required) ?? "", /older than 0\.1\.0/);
  assert.match(serverTooOld(undefined, ["driveros.agent.start"], required) ?? "", /does not offer driveros\.agent\.fix/);
});
