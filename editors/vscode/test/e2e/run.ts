/**
 * End-to-end in a real VS Code (code-server 4.100.3 + headless Chromium + playwright-core):
 * install the .vsix, open a workspace whose JSON file has a syntax error (a diagnostic from
 * VS Code's own JSON support), run the "Ask agent to fix" quick fix against the real
 * driveros-lsp and the scripted model server, confirm the Refactor Preview through the UI and
 * assert the file on disk; then more runs from the palette (fix all, an approval, a semantic
 * tool whose location in the trace opens its file, a cancel). Screenshots of the trace view and
 * the preview go to test-artifacts/.
 *
 *   DRIVEROS_CODE_SERVER=…/entry.js DRIVEROS_PYTHON=…/.venv/bin/python node out/test/e2e/run.js
 */

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import * as path from "node:path";

import { type Page, chromium } from "playwright-core";

import { Processes, freePort, log, run, waitFor } from "./harness";

const ROOT = path.resolve(__dirname, "..", "..", "..");
const REPO = path.resolve(ROOT, "..", "..");
const ARTIFACTS = path.join(ROOT, "test-artifacts");
const CHROMIUM = process.env["DRIVEROS_CHROMIUM"] ?? "/usr/lib/chromium/chromium";
const PYTHON = process.env["DRIVEROS_PYTHON"] ?? path.join(REPO, ".venv", "bin", "python");
const SERVER = process.env["DRIVEROS_LSP"] ?? path.join(path.dirname(PYTHON), "driveros-lsp");
const CODE_SERVER =
  process.env["DRIVEROS_CODE_SERVER"] ??
  path.join(process.env["DRIVEROS_CACHE"] ?? path.join(process.env["XDG_CACHE_HOME"] ?? path.join(homedir(), ".cache"), "driveros"), "code-server-4.100.3", "node_modules", "code-server", "out", "node", "entry.js");
const VSIX = path.join(ROOT, "dist", "driveros.vsix");

const BROKEN = '{\n  "name": "demo",\n  "version": "1.0.0"\n  "private": true\n}\n';
const FIXED = '{\n  "name": "demo",\n  "version": "1.0.0",\n  "private": true\n}\n';

/** The model's side of the run: one edit, then the answer. */
const SCRIPT = [
  {
    thinking: "The parser expects a comma after the version value on line 3.",
    text: "I'll add the missing comma.",
    tool_calls: [{ name: "edit_file", arguments: { path: "package-info.json", old_string: '"1.0.0"\n', new_string: '"1.0.0",\n' } }],
  },
  { tool_calls: [{ name: "read_file", arguments: { path: "package-info.json" } }] },
  { text: "Added the missing comma after the version in package-info.json; the file parses again." },
  // After "Reject with feedback…" the run resumes with the feedback as the next user turn.
  { text: "Checked again after your feedback: the comma is the only change needed." },
  // "DriverOS: Fix All in File" on the fixed file: nothing left to change.
  { tool_calls: [{ name: "read_file", arguments: { path: "package-info.json" } }] },
  { text: "package-info.json has no problems left." },
  // "DriverOS: Run Task" that runs a command the policy does not allow: asked in a modal.
  { tool_calls: [{ name: "run", arguments: { command: "python3 probe.py" } }] },
  { text: "The probe printed its line." },
  // "DriverOS: Run Task" whose model asks the language server (basedpyright) for the references.
  { tool_calls: [{ name: "references", arguments: { path: "prices.py", line: 1, column: 5 } }] },
  { text: "compute_total is called by checkout() in checkout.py." },
  // "DriverOS: Run Task", canceled while the model is still thinking.
  { delay_s: 120, text: "never sent" },
];

/** A small Python project with a cross-file use: the references step's workspace files. */
const PRICES = "def compute_total(prices):\n    return sum(prices)\n";
const CHECKOUT = "from prices import compute_total\n\n\ndef checkout(cart):\n    return compute_total(cart)\n";
/** The use in checkout.py: line 5, columns 12–24 (1-based), as the trace names it. */
const USE = { label: "checkout.py:5:12", line: 5, column: 12, length: "compute_total".length };

const FEEDBACK = "Is the comma the only change needed?";

/** A wrapper that keeps driveros-lsp's stderr as a test artifact. */
function serverWrapper(dir: string): string {
  const file = path.join(dir, "driveros-lsp");
  // The run's semantic tools start basedpyright-langserver from the PATH the server sees.
  const bin = path.dirname(PYTHON);
  writeFileSync(file, `#!/bin/sh\nPATH='${bin}':"$PATH" exec '${SERVER}' --log-level INFO "$@" 2>>'${path.join(ARTIFACTS, "driveros-lsp.log")}'\n`, { mode: 0o755 });
  return file;
}

function workspace(dir: string): string {
  const ws = path.join(dir, "ws");
  mkdirSync(path.join(ws, ".vscode"), { recursive: true });
  writeFileSync(path.join(ws, "package-info.json"), BROKEN);
  writeFileSync(path.join(ws, "probe.py"), "print('probe ran')\n");
  writeFileSync(path.join(ws, "prices.py"), PRICES);
  writeFileSync(path.join(ws, "checkout.py"), CHECKOUT);
  writeFileSync(
    path.join(ws, ".vscode", "settings.json"),
    // The network on: the local sandbox is then open, not contained, so the probe's command is
    // asked (a contained run asks nothing: docs/approval.md).
    JSON.stringify(
      { "driveros.server.path": serverWrapper(dir), "driveros.provider": "openai", "driveros.model": "scripted", "driveros.memory": false, "driveros.network": true },
      null,
      2,
    ),
  );
  return ws;
}

function userSettings(dataDir: string): void {
  const user = path.join(dataDir, "User");
  mkdirSync(user, { recursive: true });
  writeFileSync(
    path.join(user, "settings.json"),
    JSON.stringify({
      "workbench.startupEditor": "none",
      "workbench.tips.enabled": false,
      "workbench.enableExperiments": false,
      "security.workspace.trust.enabled": false,
      "telemetry.telemetryLevel": "off",
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      "update.mode": "none",
      "editor.lightbulb.enabled": "on",
      "window.commandCenter": false,
      "chat.commandCenter.enabled": false,
      "workbench.colorTheme": "Default Dark Modern",
      // The page's title is the active editor's full path: the test reads which file is open.
      "window.title": "${activeEditorLong}",
    }),
  );
}

/** Open the quick input with `key` (retried: a keystroke can land while the UI is busy). */
async function openQuickInput(page: Page, key: string): Promise<void> {
  const input = page.locator(".quick-input-widget .quick-input-box input").first();
  await waitFor(
    `the quick input (${key})`,
    async () => {
      if (!(await input.isVisible())) {
        await page.keyboard.press(key);
      }
      return input.waitFor({ state: "visible", timeout: 2000 }).then(
        () => true,
        () => undefined,
      );
    },
    30_000,
    100,
  );
}

/**
 * Run a palette command by its title. Retried as a whole: focus moving to a view that is
 * being revealed can close the palette between two keystrokes.
 */
async function command(page: Page, title: string): Promise<void> {
  const widget = page.locator(".quick-input-widget");
  const input = widget.locator(".quick-input-box input").first();
  for (let attempt = 1; ; attempt++) {
    try {
      await openQuickInput(page, "F1");
      await input.fill(`>${title}`, { timeout: 5000 });
      const row = widget.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
      await row.click({ timeout: 10_000 });
      break;
    } catch (err) {
      if (attempt === 3) {
        throw err;
      }
      log(`retrying the palette for “${title}”`);
      await page.keyboard.press("Escape");
    }
  }
  // The palette closes; a command may open its own quick pick in the same widget at once.
  await waitFor(
    `the palette to run “${title}”`,
    async () => (!(await widget.isVisible()) || (await input.inputValue()) !== `>${title}` ? true : undefined),
    10_000,
    50,
  );
}

/** Choose an item of the open quick pick by its text. */
async function pick(page: Page, text: string): Promise<void> {
  const row = page.locator(".quick-input-widget .quick-input-list .monaco-list-row", { hasText: text }).first();
  await row.waitFor({ state: "visible", timeout: 20_000 });
  await row.click();
}

async function main(): Promise<void> {
  if (!existsSync(CODE_SERVER)) {
    throw new Error(`DRIVEROS_CODE_SERVER (${CODE_SERVER || "unset"}) is not code-server's entry.js: run scripts/install-code-server.sh`);
  }
  for (const [what, file] of [["the .vsix", VSIX], ["driveros-lsp", SERVER], ["Chromium", CHROMIUM]] as const) {
    if (!existsSync(file)) {
      throw new Error(`${what} not found at ${file}`);
    }
  }
  rmSync(ARTIFACTS, { recursive: true, force: true });
  mkdirSync(ARTIFACTS, { recursive: true });
  const tmp = mkdtempSync(path.join(tmpdir(), "driveros-vscode-e2e-"));
  const procs = new Processes();
  const ws = workspace(tmp);
  const dataDir = path.join(tmp, "data");
  const extDir = path.join(tmp, "extensions");
  userSettings(dataDir);
  const baseEnv: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_CONFIG_HOME: path.join(tmp, "xdg-config"),
    XDG_DATA_HOME: path.join(tmp, "xdg-data"),
    XDG_CACHE_HOME: path.join(tmp, "xdg-cache"),
  };
  let page: Page | undefined;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  try {
    const scriptFile = path.join(tmp, "script.json");
    writeFileSync(scriptFile, JSON.stringify(SCRIPT));
    const model = await procs.startWithJsonLine(PYTHON, ["-m", "driveros.testing.scripted", "--script", scriptFile], {
      logFile: path.join(ARTIFACTS, "scripted-model.log"),
    });
    log(`scripted model at ${String(model["openai_base_url"])}`);

    const cs = [CODE_SERVER, "--user-data-dir", dataDir, "--extensions-dir", extDir];
    await run(process.execPath, [...cs, "--install-extension", VSIX], baseEnv);
    log("installed the .vsix");

    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...baseEnv,
      OPENAI_BASE_URL: String(model["openai_base_url"]),
      OPENAI_API_KEY: "test-key",
      OPENAI_MODEL: "scripted",
    };
    procs.start(
      process.execPath,
      [...cs, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", ws],
      { env, logFile: path.join(ARTIFACTS, "code-server.log"), cwd: ws },
    );
    const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`;
    await waitFor("code-server to listen", async () => ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok ? true : undefined), 60_000);

    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(url);
    await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 60_000 });
    log("workbench loaded");

    // The extension starts driveros-lsp and shows its status bar item.
    await page.locator(".statusbar-item", { hasText: "DriverOS" }).first().waitFor({ timeout: 60_000 });

    // Open the broken file and wait for VS Code's JSON diagnostic.
    await openQuickInput(page, "Control+P");
    await page.locator(".quick-input-widget .quick-input-box input").first().fill("package-info.json");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "package-info.json" }).first().waitFor();
    await page.keyboard.press("Enter");
    await page.locator(".monaco-editor .squiggly-error").first().waitFor({ timeout: 60_000 });
    log("diagnostic shown");

    // Cursor on the diagnostic, then the quick fix menu (retried until the server answers).
    await page.locator(".monaco-editor .squiggly-error").first().click({ force: true });
    const fix = page.locator(".action-widget .monaco-list-row", { hasText: "Ask agent to fix" }).first();
    await waitFor(
      "the “Ask agent to fix” quick fix",
      async () => {
        await page?.keyboard.press("Control+.");
        const shown = await fix.waitFor({ timeout: 3000 }).then(
          () => true,
          () => undefined,
        );
        if (shown === undefined) {
          await page?.keyboard.press("Escape");
        }
        return shown;
      },
      60_000,
      100,
    );
    await page.screenshot({ path: path.join(ARTIFACTS, "vscode-quickfix.png") });
    // The menu lays a pointer block over the page: focus the row by hovering, choose it with Enter.
    await fix.hover({ force: true });
    await waitFor("the quick fix row to be focused", async () => ((await fix.getAttribute("class"))?.includes("focused") === true ? true : undefined), 5000, 100);
    await page.keyboard.press("Enter");
    log("quick fix chosen");

    // The run streams into the trace view; its proposal opens the Refactor Preview. Dismiss it
    // first: "Review Proposal" must bring it back, and offer the per-file diff.
    const preview = page.locator(".bulk-edit-panel[data-state=data]");
    await preview.waitFor({ state: "visible", timeout: 120_000 });
    log("refactor preview open");
    await preview.locator(".buttons .monaco-button", { hasText: "Discard" }).first().click();
    await preview.waitFor({ state: "hidden", timeout: 10_000 });
    log("preview discarded");

    await command(page, "DriverOS: Review Proposal");
    await pick(page, "package-info.json");
    const diff = page.locator(".monaco-diff-editor").first();
    await diff.waitFor({ state: "visible", timeout: 20_000 });
    await diff.locator(".editor.modified .view-line", { hasText: '"1.0.0",' }).first().waitFor({ timeout: 20_000 });
    await diff.locator(".editor.original .view-line", { hasText: '"1.0.0"' }).first().waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, "vscode-diff.png") });
    log("per-file diff shows the sandbox version");

    await command(page, "DriverOS: Review Proposal");
    await pick(page, "Open in Refactor Preview");
    await preview.waitFor({ state: "visible", timeout: 30_000 });
    log("refactor preview reopened");
    await preview.locator(".buttons .monaco-button", { hasText: "Discard" }).first().click();
    await preview.waitFor({ state: "hidden", timeout: 10_000 });

    // Reject with feedback: the run resumes, answers, and proposes again (preview opens anew).
    await command(page, "DriverOS: Review Proposal");
    await pick(page, "Reject with feedback");
    const feedbackBox = page.locator(".quick-input-widget .quick-input-box input").first();
    await feedbackBox.waitFor({ state: "visible" });
    await feedbackBox.fill(FEEDBACK);
    await page.keyboard.press("Enter");
    log("rejected with feedback");
    await preview.waitFor({ state: "visible", timeout: 60_000 });
    log("the resumed run proposed again");
    await command(page, "Notifications: Clear All Notifications");
    await preview.waitFor({ state: "visible" });

    // needsConfirmation: every change starts unticked; tick the file (it ticks its hunks).
    const boxes = preview.locator("input.edit-checkbox, .edit-checkbox input, .edit-checkbox");
    await boxes.first().waitFor();
    await boxes.first().check();
    await waitFor(
      "every change in the preview to be ticked",
      async () => {
        const states = await Promise.all((await boxes.all()).map((b) => b.isChecked()));
        return states.length > 0 && states.every(Boolean) ? true : undefined;
      },
      10_000,
    );
    await page.screenshot({ path: path.join(ARTIFACTS, "vscode-review.png") });
    await preview.locator(".buttons .monaco-button", { hasText: "Apply" }).first().click();
    log("applied");

    await command(page, "File: Save All");
    const onDisk = await waitFor(
      "the fix on disk",
      () => {
        const text = readFileSync(path.join(ws, "package-info.json"), "utf8");
        return text === FIXED ? text : undefined;
      },
      30_000,
    );
    JSON.parse(onDisk);
    log("file on disk is fixed");

    await command(page, "DriverOS: Show Trace");
    const rows = page.locator(".part.panel .monaco-list-row");
    await rows.filter({ hasText: "Turn 1" }).first().waitFor({ timeout: 30_000 });
    await command(page, "View: Toggle Maximized Panel");
    for (const label of ["Turn 1", "thinking", "edit_file package-info.json", "diagnostics", "Turn 4", "proposal", "outcome: answered"]) {
      await rows.filter({ hasText: label }).first().waitFor({ timeout: 30_000 });
    }
    await command(page, "Notifications: Clear All Notifications");
    await page.mouse.move(0, 0);
    const panel = await page.locator(".part.panel").boundingBox();
    if (panel === null) {
      throw new Error("the panel has no bounding box");
    }
    await page.screenshot({ path: path.join(ARTIFACTS, "vscode-trace.png"), clip: { ...panel, height: Math.min(panel.height, 480) } });
    log("trace view captured");

    // Fix All in File on the (now valid) file: a run that ends without a proposal.
    await command(page, "View: Close All Editors");
    await openQuickInput(page, "Control+P");
    await page.locator(".quick-input-widget .quick-input-box input").first().fill("package-info.json");
    // Not the history entry of the diff editor ("package-info.json ↔ DriverOS proposal").
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "package-info.json", hasNotText: "↔" }).first().click();
    await page.locator(".tabs-container .tab.active", { hasText: "package-info.json" }).first().waitFor();
    await command(page, "DriverOS: Fix All in File");
    // The newest run: two scripted turns (120 tokens each), no proposal.
    await rows.filter({ hasText: "answered · 240 tok" }).first().waitFor({ timeout: 30_000 });
    await command(page, "DriverOS: Show Trace");
    await rows.filter({ hasText: "outcome: answered" }).filter({ hasText: "2 turns" }).first().waitFor({ timeout: 30_000 });
    log("fix all in file ran");

    // Approval "ask": a command outside the policy is asked in a modal, answered "Allow once".
    await command(page, "DriverOS: Run Task");
    const probeBox = page.locator(".quick-input-widget .quick-input-box input").first();
    await probeBox.waitFor({ state: "visible" });
    await probeBox.fill("Run the probe");
    await page.keyboard.press("Enter");
    const dialog = page.locator(".monaco-dialog-box", { hasText: "DriverOS wants to run a command" }).first();
    await dialog.waitFor({ state: "visible", timeout: 60_000 });
    await dialog.locator(".dialog-message-detail", { hasText: "python3 probe.py" }).first().waitFor();
    await dialog.locator(".dialog-message-detail", { hasText: "Runs in: local (bubblewrap), network on, scratch copy" }).first().waitFor();
    for (const answer of ["Allow once", "Allow for this run", "Deny"]) {
      await dialog.locator(".monaco-button", { hasText: answer }).first().waitFor();
    }
    await page.screenshot({ path: path.join(ARTIFACTS, "vscode-approval.png") });
    await dialog.locator(".monaco-button", { hasText: "Allow once" }).first().click();
    await dialog.waitFor({ state: "hidden", timeout: 10_000 });
    log("approval modal answered");
    await command(page, "DriverOS: Show Trace");
    await rows.filter({ hasText: "Run the probe" }).filter({ hasText: "answered" }).first().waitFor({ timeout: 60_000 });
    const probeTurn = rows.filter({ hasText: "Turn 1" }).filter({ hasText: "1 tool call" }).last();
    await waitFor(
      "the approval in the trace",
      async () => {
        if (await rows.filter({ hasText: "run approved (asked" }).first().isVisible()) {
          return true;
        }
        await probeTurn.click().catch(() => undefined);
        return (await rows.filter({ hasText: "run approved (asked" }).first().isVisible()) ? true : undefined;
      },
      30_000,
      500,
    );
    log("the answer is in the trace");

    // A semantic tool's answer in the trace: its locations are nodes, and clicking one (the tree
    // item's own command, as VS Code runs it) opens the file with the identifier selected.
    await command(page, "DriverOS: Run Task");
    const refsBox = page.locator(".quick-input-widget .quick-input-box input").first();
    await refsBox.waitFor({ state: "visible" });
    await refsBox.fill("Where is compute_total used?");
    await page.keyboard.press("Enter");
    await rows.filter({ hasText: "Where is compute_total used?" }).filter({ hasText: "answered" }).first().waitFor({ timeout: 60_000 });
    await command(page, "DriverOS: Show Trace");
    const refsCall = rows.filter({ hasText: "references prices.py" }).first();
    const useRow = rows.filter({ hasText: USE.label }).first();
    await waitFor(
      `the location ${USE.label} in the trace`,
      async () => {
        if (await useRow.isVisible()) {
          return true;
        }
        if ((await refsCall.getAttribute("aria-expanded")) === "false") {
          await refsCall.click();
        }
        return undefined;
      },
      30_000,
      500,
    );
    await useRow.click();
    const usePath = path.join(ws, "checkout.py");
    let title = "";
    await waitFor(
      `the active editor to be ${usePath}`,
      async () => {
        title = (await page?.title()) ?? "";
        return title === usePath ? true : undefined;
      },
      30_000,
    ).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)} (the window title is “${title}”)`);
    });
    await page.locator(".tabs-container .tab.active", { hasText: "checkout.py" }).first().waitFor({ timeout: 10_000 });
    // The selection is the identifier: the cursor at its end, its length selected.
    const selection = `Ln ${USE.line}, Col ${USE.column + USE.length} (${USE.length} selected)`;
    const cursor = page.locator(".statusbar-item", { hasText: /^Ln \d+, Col \d+/ }).first();
    let shown = "";
    await waitFor(
      `the status bar to read “${selection}”`,
      async () => {
        shown = (await cursor.textContent({ timeout: 1000 }))?.trim() ?? "";
        return shown === selection ? true : undefined;
      },
      10_000,
    ).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)} (it reads “${shown}”)`);
    });
    log(`the trace location opened ${USE.label} with the identifier selected`);

    // Run Task, see it running in the status bar, cancel it (the model is still "thinking").
    await command(page, "DriverOS: Run Task");
    const taskBox = page.locator(".quick-input-widget .quick-input-box input").first();
    await taskBox.waitFor({ state: "visible" });
    await taskBox.fill("Explain what this workspace is for");
    await page.keyboard.press("Enter");
    const running = page.locator(".statusbar-item", { hasText: "1 running" }).first();
    await running.waitFor({ timeout: 30_000 });
    log("run task started");
    await command(page, "DriverOS: Cancel Run");
    await running.waitFor({ state: "hidden", timeout: 60_000 });
    await rows.filter({ hasText: "Explain what this workspace is for" }).first().waitFor({ timeout: 30_000 });
    await rows.filter({ hasText: "canceled" }).first().waitFor({ timeout: 30_000 });
    log("run canceled");

    // Point driveros.server.path at nothing: the client restarts, and says what is wrong and how to fix it.
    const settingsFile = path.join(ws, ".vscode", "settings.json");
    const settings = JSON.parse(readFileSync(settingsFile, "utf8")) as Record<string, unknown>;
    writeFileSync(settingsFile, JSON.stringify({ ...settings, "driveros.server.path": path.join(tmp, "missing", "driveros-lsp") }));
    const notice = page.locator(".notification-list-item", { hasText: "which is not an executable file" }).first();
    await notice.waitFor({ timeout: 30_000 });
    await notice.locator(".monaco-button", { hasText: "Open Settings" }).first().waitFor();
    await page.locator(".statusbar-item.has-background-color", { hasText: "DriverOS" }).first().waitFor({ timeout: 10_000 });
    log("a missing server is reported with its fix");
  } catch (err) {
    if (page !== undefined) {
      await page.screenshot({ path: path.join(ARTIFACTS, "vscode-failure.png") }).catch(() => undefined);
    }
    throw err;
  } finally {
    await browser.close().catch(() => undefined);
    await procs.killAll();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => log("passed"),
  (err: unknown) => {
    log(`FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    log(`artifacts: ${ARTIFACTS}`);
    process.exitCode = 1;
  },
);
