// Drives `driveros acp` with the official TypeScript SDK's client (@agentclientprotocol/sdk)
// and records every fs/read_text_file request, answering only for regular files (a real
// editor would open whatever it is asked). argv: SDK_ENTRY DRIVEROS WORKSPACE PROMPT_JSON
// Prints one JSON summary line on stdout.
import { spawn } from "node:child_process";
import { lstat, readFile } from "node:fs/promises";
import { Readable, Writable } from "node:stream";

const [entry, driveros, workspace, promptJson] = process.argv.slice(2);
const acp = await import(entry);

const agent = spawn(driveros, ["acp"], { cwd: workspace, stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const reads = [];

const app = acp
  .client()
  .onNotification("session/update", () => {})
  .onRequest("session/request_permission", () => ({
    outcome: { outcome: "selected", optionId: "reject_once" },
  }))
  .onRequest("fs/read_text_file", async (cx) => {
    reads.push(cx.params.path);
    const st = await lstat(cx.params.path);
    if (!st.isFile()) throw new Error(`not a regular file: ${cx.params.path}`);
    return { content: await readFile(cx.params.path, "utf8") };
  })
  .onRequest("fs/write_text_file", () => ({}));

const summary = await app.connectWith(stream, async (cx) => {
  await cx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  });
  const session = await cx.request("session/new", { cwd: workspace, mcpServers: [] });
  const result = await cx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: JSON.parse(promptJson),
  });
  return { stopReason: result.stopReason };
});
agent.stdin.end();
await new Promise((resolve) => agent.on("exit", resolve));
console.log(JSON.stringify({ ...summary, reads, exit: agent.exitCode }));
