/**
 * Processes for the end-to-end test: the scripted model server, code-server, Chromium.
 * Every child runs in its own process group and is killed as a group at the end.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { createServer } from "node:net";
import * as path from "node:path";
import { createInterface } from "node:readline";

export function log(message: string): void {
  process.stderr.write(`e2e: ${message}\n`);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr !== null ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

export async function waitFor<T>(label: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) {
        return v;
      }
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  const why = lastError instanceof Error ? `: ${lastError.message}` : "";
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${label}${why}`);
}

/** Children started by the test, killed (whole process group) by `killAll`. */
export class Processes {
  private readonly children: ChildProcess[] = [];

  start(command: string, args: string[], opts: { env?: NodeJS.ProcessEnv; logFile: string; cwd?: string }): ChildProcess {
    const out = createWriteStream(opts.logFile);
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    child.stderr?.pipe(out);
    this.children.push(child);
    return child;
  }

  /** Start a process whose first stdout line is a JSON object (the scripted model server). */
  async startWithJsonLine(command: string, args: string[], opts: { env?: NodeJS.ProcessEnv; logFile: string }): Promise<Record<string, unknown>> {
    const child = this.start(command, args, opts);
    const stdout = child.stdout;
    if (stdout === null) {
      throw new Error(`${command}: no stdout`);
    }
    const rl = createInterface({ input: stdout });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${path.basename(command)} printed nothing in 30 s (see ${opts.logFile})`)), 30_000);
      child.once("exit", (code) => reject(new Error(`${path.basename(command)} exited with ${code} (see ${opts.logFile})`)));
      rl.once("line", (line) => {
        clearTimeout(timer);
        try {
          resolve(JSON.parse(line) as Record<string, unknown>);
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    });
  }

  async killAll(): Promise<void> {
    for (const child of this.children.reverse()) {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        try {
          process.kill(-child.pid, "SIGTERM");
        } catch {
          continue;
        }
        const timeout = new Promise((r) => setTimeout(r, 5000, "timeout"));
        if ((await Promise.race([exited, timeout])) === "timeout") {
          try {
            process.kill(-child.pid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      }
    }
  }
}

/** Run a command to completion; rejects with its output on a non-zero exit. */
export async function run(command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(output) : reject(new Error(`${command} ${args.join(" ")} exited ${code}:\n${output}`))));
  });
}
