// Drives `driveros acp` with the official TypeScript SDK's client (@agentclientprotocol/sdk):
// initialize, session/new, a prompt whose edit is allowed and written through
// fs/write_text_file. Prints one JSON summary line on stdout.
// argv: SDK_ENTRY DRIVEROS WORKSPACE
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

const [entry, driveros, workspace] = process.argv.slice(2);
const acp = await import(entry);

const agent = spawn(driveros, ["acp"], { cwd: workspace, stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const updates = [];
const writes = [];
const permissions = [];

const app = acp
  .client()
  .onNotification("session/update", (cx) => {
    updates.push(cx.params.update.sessionUpdate);
  })
  .onRequest("session/request_permission", (cx) => {
    permissions.push(cx.params.options.map((o) => o.kind));
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  })
  .onRequest("fs/read_text_file", async (cx) => {
    const fs = await import("node:fs/promises");
    return { content: await fs.readFile(cx.params.path, "utf8") };
  })
  .onRequest("fs/write_text_file", (cx) => {
    writes.push({ path: cx.params.path, content: cx.params.content });
    return {};
  });

const summary = await app.connectWith(stream, async (cx) => {
  const init = await cx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  });
  const session = await cx.request("session/new", { cwd: workspace, mcpServers: [] });
  const result = await cx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "fix the test" }],
  });
  return { protocolVersion: init.protocolVersion, stopReason: result.stopReason };
});
agent.stdin.end();
await new Promise((resolve) => agent.on("exit", resolve));
console.log(JSON.stringify({ ...summary, updates, writes, permissions, exit: agent.exitCode }));
