/**
 * Finds the `driveros-lsp` executable: the `driveros.server.path` setting, else the workspace
 * virtualenv (only in a trusted workspace: a cloned repository's `.venv` is its code), else
 * PATH. Kept free of the `vscode` module so the lookup order is unit-tested.
 */

import { accessSync, constants, statSync } from "node:fs";
import * as path from "node:path";

import { SERVER_NAME } from "./protocol";

export type ServerSource = "setting" | "workspace .venv" | "PATH";

export interface ResolvedServer {
  command: string;
  source: ServerSource;
}

export interface ResolveOptions {
  /** `driveros.server.path`; `~` and `${workspaceFolder}` are expanded. */
  configured: string;
  workspaceFolders: readonly string[];
  envPath: string | undefined;
  home: string;
  /** `vscode.workspace.isTrusted`: a workspace's own `.venv` is used only when true. */
  workspaceTrusted: boolean;
  platform?: NodeJS.Platform;
}

export function isExecutable(file: string): boolean {
  try {
    if (!statSync(file).isFile()) {
      return false;
    }
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function expandPath(value: string, home: string, workspaceFolder: string | undefined): string {
  let v = value.trim();
  if (v === "~" || v.startsWith("~/")) {
    v = path.join(home, v.slice(1));
  }
  if (workspaceFolder !== undefined) {
    v = v.split("${workspaceFolder}").join(workspaceFolder);
  }
  return v;
}

/**
 * The server to start, or a human reason why there is none. A configured path that is not an
 * executable is an error, not a reason to fall back silently.
 */
export function resolveServer(opts: ResolveOptions): ResolvedServer | { error: string } {
  const win = (opts.platform ?? process.platform) === "win32";
  const exe = win ? `${SERVER_NAME}.exe` : SERVER_NAME;
  if (opts.configured.trim() !== "") {
    const configured = expandPath(opts.configured, opts.home, opts.workspaceFolders[0]);
    const candidate = path.isAbsolute(configured) || opts.workspaceFolders.length === 0 ? configured : path.join(opts.workspaceFolders[0] ?? "", configured);
    if (isExecutable(candidate)) {
      return { command: candidate, source: "setting" };
    }
    return { error: `driveros.server.path is set to "${opts.configured}", which is not an executable file.` };
  }
  let untrusted: string | undefined;
  for (const folder of opts.workspaceFolders) {
    const candidate = path.join(folder, ".venv", win ? "Scripts" : "bin", exe);
    if (isExecutable(candidate)) {
      if (opts.workspaceTrusted) {
        return { command: candidate, source: "workspace .venv" };
      }
      untrusted ??= candidate;
    }
  }
  for (const dir of (opts.envPath ?? "").split(path.delimiter)) {
    if (dir === "") {
      continue;
    }
    const candidate = path.join(dir, exe);
    if (isExecutable(candidate)) {
      return { command: candidate, source: "PATH" };
    }
  }
  if (untrusted !== undefined) {
    return { error: `${SERVER_NAME} is in the workspace (${untrusted}), which is not trusted: a repository's own .venv is its code. Trust the workspace, or install ${SERVER_NAME} on PATH.` };
  }
  return { error: `${SERVER_NAME} was not found in the workspace .venv or on PATH.` };
}

/** Compare dotted versions numerically ("0.10.0" > "0.9.1"); pre-release tails are ignored. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string): number[] => v.split(/[.+-]/).slice(0, 3).map((p) => Number.parseInt(p, 10) || 0);
  const pa = parse(a);
  const pb = parse(b);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) {
      return d;
    }
  }
  return 0;
}

/** The oldest server this client speaks to. */
export const MIN_SERVER_VERSION = "0.1.0";

/**
 * Why a started server is too old for this client, or undefined when it is fine. `commands` is
 * the server's executeCommandProvider list; a server lacking one of ours predates this client.
 */
export function serverTooOld(version: string | undefined, commands: readonly string[], required: readonly string[]): string | undefined {
  if (version !== undefined && compareVersions(version, MIN_SERVER_VERSION) < 0) {
    return `${SERVER_NAME} ${version} is older than ${MIN_SERVER_VERSION}, the oldest this extension supports.`;
  }
  const missing = required.filter((c) => !commands.includes(c));
  if (missing.length > 0) {
    return `${SERVER_NAME}${version !== undefined ? ` ${version}` : ""} does not offer ${missing.join(", ")}: it is older than this extension.`;
  }
  return undefined;
}
