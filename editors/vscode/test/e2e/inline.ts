/**
 * Ghost text end to end in a real VS Code (code-server + headless Chromium + playwright-core):
 * the installed .vsix starts the real driveros-lsp, which answers textDocument/inlineCompletion
 * from the scripted model's FIM route (/v1/completions). Typing in a Python file shows the
 * suggestion as ghost text; Tab inserts it; the saved file on disk has it. The screenshot of
 * the ghost text goes to test-artifacts/vscode-inline.png.
 *
 *   DRIVEROS_CODE_SERVER=…/entry.js DRIVEROS_PYTHON=…/.venv/bin/python node out/test/e2e/inline.js
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

const SOURCE = "def add(a, b):\n    \n\n\nprint(add(1, 2))\n";
const EXPECTED = "def add(a, b):\n    return a + b\n\n\nprint(add(1, 2))\n";
/** The FIM endpoint's answer after the user typed "r" on the empty line of add(). */
const SCRIPT = { turns: [{ text: "eturn a + b" }], repeat_last: true };

function userSettings(dataDir: string, serverPath: string): void {
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
      "window.commandCenter": false,
      "chat.commandCenter.enabled": false,
      "workbench.colorTheme": "Default Dark Modern",
      "editor.inlineSuggest.enabled": true,
      "editor.quickSuggestions": { other: false, comments: false, strings: false },
      "editor.suggestOnTriggerCharacters": false,
      "driveros.server.path": serverPath,
      "driveros.provider": "openai",
      "driveros.inlineCompletion.api": "completions",
      "driveros.inlineCompletion.model": "scripted-model",
      "driveros.inlineCompletion.debounceMs": 50,
    }),
  );
}

/** The text of the ghost text decorations in the editor ('' when none). */
async function ghostText(page: Page): Promise<string> {
  const parts = await page.locator('.monaco-editor .view-lines [class*="ghost-text"]').allTextContents();
  return parts.join("").replace(/\u00a0/g, " "); // the editor draws spaces as &nbsp;
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
  mkdirSync(ARTIFACTS, { recursive: true });
  const tmp = mkdtempSync(path.join(tmpdir(), "driveros-vscode-inline-"));
  const procs = new Processes();
  const ws = path.join(tmp, "ws");
  mkdirSync(ws, { recursive: true });
  writeFileSync(path.join(ws, "add.py"), SOURCE);
  const dataDir = path.join(tmp, "data");
  const extDir = path.join(tmp, "extensions");
  const wrapper = path.join(tmp, "driveros-lsp");
  writeFileSync(wrapper, `#!/bin/sh\nexec '${SERVER}' --log-level INFO "$@" 2>>'${path.join(ARTIFACTS, "driveros-lsp-inline.log")}'\n`, { mode: 0o755 });
  userSettings(dataDir, wrapper);
  const baseEnv: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_CONFIG_HOME: path.join(tmp, "xdg-config"),
    XDG_DATA_HOME: path.join(tmp, "xdg-data"),
    XDG_CACHE_HOME: path.join(tmp, "xdg-cache"),
    XDG_STATE_HOME: path.join(tmp, "xdg-state"),
  };
  let page: Page | undefined;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  try {
    const scriptFile = path.join(tmp, "script.json");
    writeFileSync(scriptFile, JSON.stringify(SCRIPT));
    const model = await procs.startWithJsonLine(PYTHON, ["-m", "driveros.testing.scripted", "--script", scriptFile], {
      logFile: path.join(ARTIFACTS, "scripted-model-inline.log"),
    });
    const cs = [CODE_SERVER, "--user-data-dir", dataDir, "--extensions-dir", extDir];
    await run(process.execPath, [...cs, "--install-extension", VSIX], baseEnv);
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...baseEnv, OPENAI_BASE_URL: String(model["openai_base_url"]), OPENAI_API_KEY: "test-key" };
    procs.start(
      process.execPath,
      [...cs, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", ws],
      { env, logFile: path.join(ARTIFACTS, "code-server-inline.log"), cwd: ws },
    );
    await waitFor("code-server to listen", async () => ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok ? true : undefined), 60_000);
    page = await browser.newPage({ viewport: { width: 1100, height: 520 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 60_000 });
    await page.locator(".statusbar-item", { hasText: "DriverOS" }).first().waitFor({ timeout: 60_000 });
    log("workbench loaded, DriverOS started");

    await page.keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget .quick-input-box input").first();
    await input.waitFor({ state: "visible", timeout: 20_000 });
    await input.fill("add.py");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "add.py" }).first().waitFor();
    await page.keyboard.press("Enter");
    await page.locator(".monaco-editor .view-lines").first().waitFor({ timeout: 30_000 });
    await page.locator(".monaco-editor .view-line", { hasText: "def add" }).first().click();
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("End");

    // Type; the server answers after its debounce and VS Code draws the ghost text. A
    // keystroke that lands before the provider is registered asks nothing: type it again.
    await page.keyboard.type("r");
    let tries = 0;
    await waitFor(
      "the ghost text",
      async () => {
        if ((await ghostText(page as Page)).includes("eturn a + b")) {
          return true;
        }
        if (++tries % 6 === 0) {
          await page?.keyboard.press("Backspace");
          await page?.keyboard.type("r");
        }
        return undefined;
      },
      60_000,
      500,
    );
    log(`ghost text shown: ${await ghostText(page)}`);
    await page.screenshot({ path: path.join(ARTIFACTS, "vscode-inline.png") });

    await page.keyboard.press("Tab");
    await page.keyboard.press("Control+S");
    const file = path.join(ws, "add.py");
    await waitFor("Tab to insert the suggestion and the file to be saved", () => (readFileSync(file, "utf8") === EXPECTED ? true : undefined), 20_000);
    log("Tab inserted the suggestion");
    const counts = path.join(tmp, "xdg-state", "driveros", "inline-acceptance.json");
    await waitFor("the acceptance to be counted", () => (existsSync(counts) && readFileSync(counts, "utf8").includes('"accepted": 1') ? true : undefined), 20_000);
    log("the acceptance was counted");
  } catch (err) {
    if (page !== undefined) {
      const html = await page.locator(".monaco-editor").first().innerHTML().catch(() => "");
      writeFileSync(path.join(ARTIFACTS, "vscode-inline-failure.html"), html);
      await page.screenshot({ path: path.join(ARTIFACTS, "vscode-inline-failure.png") }).catch(() => undefined);
    }
    throw err;
  } finally {
    await browser.close().catch(() => undefined);
    await procs.killAll();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => log("inline passed"),
  (err: unknown) => {
    log(`inline FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    log(`artifacts: ${ARTIFACTS}`);
    process.exitCode = 1;
  },
);
