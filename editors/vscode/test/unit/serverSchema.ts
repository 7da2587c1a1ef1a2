/** Reads the server's settings JSON Schema from the real driveros_lsp package. */

import { existsSync } from "node:fs";
import * as path from "node:path";

import type { JsonObject } from "../../src/settingsSchema";

type ExecFileSync = (file: string, args: string[], options: { encoding: "utf8" }) => string;

/** editors/vscode (found from this file whether it runs from out/ or not). */
export function extensionRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, "package.json")) || !existsSync(path.join(dir, "src", "protocol.ts"))) {
    const up = path.dirname(dir);
    if (up === dir) {
      throw new Error("cannot find editors/vscode from the test");
    }
    dir = up;
  }
  return dir;
}

export function repoRoot(): string {
  return path.resolve(extensionRoot(), "..", "..");
}

/** The interpreter that has driveros installed: $DRIVEROS_PYTHON, else the repository's .venv. */
export function python(): string {
  return process.env["DRIVEROS_PYTHON"] ?? path.join(repoRoot(), ".venv", "bin", "python");
}

/** The schema as `driveros-lsp --print-settings-schema` prints it (run through the interpreter). */
export function serverSchema(execFileSync: ExecFileSync): JsonObject {
  return JSON.parse(execFileSync(python(), ["-m", "driveros_lsp", "--print-settings-schema"], { encoding: "utf8" })) as JsonObject;
}
