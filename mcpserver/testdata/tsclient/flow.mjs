// An agent's whole flow through the official TypeScript SDK over stdio (issue 42):
//   node flow.mjs SBF_BINARY WORKSPACE     (spawns `sbf -C WORKSPACE mcp`)
// It sets logging/setLevel debug, creates an instance with progress (a total once the engine
// knows its steps), runs a command, switches the files toolset on and writes a file and reads it
// back, destroys the instance, and checks the log lines it heard: the create's steps, its lease
// and the destroy, each naming WORKSPACE. Prints one JSON line with "ok":true.
import assert from "node:assert/strict";
import fs from "node:fs";
import { CallToolResultSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect } from "./sdk.mjs";

const [binary, workspace] = process.argv.slice(2);
const logs = [];
const { client, ok } = await connect({ name: "sbf-agent-flow", mode: "stdio", target: binary,
  serverArgs: ["-C", workspace, "mcp"],
  setup: (c) => c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params)) });
await client.setLoggingLevel("debug");
await client.listTools();

// The SDK (1.32.2) hands a notification to its handler in a microtask but an answer at once:
// progress read in the same chunk as the answer never reaches onprogress (the answer removed
// it first), as a loaded machine showed. The server sends every step before its answer (its
// stdio flush); what it sent is checked as it arrived, and onprogress for what it got.
const arrived = [];
const deliver = client.transport.onmessage;
client.transport.onmessage = (message, extra) => {
  if (message.method === "notifications/progress") arrived.push(message.params);
  deliver(message, extra);
};
const progress = [];
const created = await client.callTool({ name: "create_instance",
  arguments: { workspace_root: workspace, auto_bootstrap: false } }, CallToolResultSchema,
{ onprogress: (p) => progress.push(p) });
assert.ok(!created.isError, JSON.stringify(created));
const id = created.structuredContent.instance_id;
assert.ok(arrived.some((p) => p.total > 0 && p.progress < p.total),
  `progress with a total: ${JSON.stringify(arrived)}`);
assert.ok(progress.length > 0 && progress.every((p) => arrived.some((a) => a.progress === p.progress)),
  `onprogress heard ${JSON.stringify(progress)} of ${JSON.stringify(arrived)}`);

const run = await ok("run_command", { instance_id: id, command: "echo hello" });
assert.equal(run.stdout.trim(), "hello", JSON.stringify(run));

await ok("enable_toolset", { toolset: "files" });
assert.ok((await client.listTools()).tools.some((t) => t.name === "write_file"), "files listed once enabled");
await ok("write_file", { instance_id: id, path: "notes.txt", content: "from the agent\n" });
const read = await ok("read_file", { instance_id: id, path: "notes.txt" });
assert.equal(read.content, "from the agent\n", JSON.stringify(read));

await ok("destroy_instance", { instance_id: id });
const want = ["debug:create_started", "info:create", "info:lease_acquired", "info:delete"];
const heard = () => logs.map((l) => `${l.level}:${l.data?.event}`);
for (let i = 0; i < 100 && !want.every((w) => heard().includes(w)); i++) {
  await new Promise((r) => setTimeout(r, 20)); // log lines travel beside the answers
}
for (const w of want) assert.ok(heard().includes(w), `no ${w} among ${JSON.stringify(heard())}`);
const root = fs.realpathSync(workspace);
const bound = logs.filter((l) => l.data?.workspace_root !== undefined);
assert.ok(bound.length === logs.length && bound.every((l) => l.data.workspace_root === root),
  `every log line names ${root}: ${JSON.stringify(logs)}`);

await client.close();
console.log(JSON.stringify({ ok: true, instance: id, progress: progress.length, logs: heard() }));
