import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { type CommandContext, registerCommands } from "../../src/commands";
import { RunStore } from "../../src/runs";
import { extensionRoot } from "./serverSchema";
import { state } from "./vscodeStub";

interface Pkg {
  main: string;
  engines: { vscode: string };
  devDependencies: Record<string, string>;
  contributes: {
    commands: { command: string; title: string; category: string }[];
    menus: Record<string, { command: string }[]>;
    views: Record<string, { id: string }[]>;
  };
}

const pkg = JSON.parse(readFileSync(path.join(extensionRoot(), "package.json"), "utf8")) as Pkg;

test("test_manifest_commands_equal_registered_commands", () => {
  const ctx = { store: new RunStore() } as unknown as CommandContext;
  const disposables = registerCommands(ctx);
  const registered = [...state.commands.keys()].sort();
  for (const d of disposables) {
    d.dispose();
  }
  assert.deepEqual(pkg.contributes.commands.map((c) => c.command).sort(), registered);
});

test("test_manifest_palette_has_the_issue_commands", () => {
  const titles = pkg.contributes.commands.map((c) => `${c.category}: ${c.title}`);
  for (const t of ["Run Task", "Fix Diagnostics at Cursor", "Fix All in File", "Cancel Run", "Review Proposal", "Show Trace", "Show Runs", "Restart Server"]) {
    assert.ok(titles.includes(`DriverOS: ${t}`), `missing palette command DriverOS: ${t}`);
  }
});

test("test_manifest_menus_name_declared_commands_and_views", () => {
  const declared = new Set(pkg.contributes.commands.map((c) => c.command));
  for (const [menu, items] of Object.entries(pkg.contributes.menus)) {
    for (const item of items) {
      assert.ok(declared.has(item.command), `${menu} names undeclared ${item.command}`);
    }
  }
  assert.deepEqual(Object.values(pkg.contributes.views).flat().map((v) => v.id), ["driveros.trace"]);
});

test("test_manifest_types_vscode_matches_engine", () => {
  assert.equal(pkg.devDependencies["@types/vscode"], pkg.engines.vscode.replace(/^\^/, ""));
  assert.equal(pkg.main, "./dist/extension.js");
});
