// A long call through the official TypeScript SDK, as an agent makes it:
//   node longcalls.mjs stdio SBF_BINARY WORKSPACE
// The server's sim boots for SBF_SIM_LATENCY (longer than TIMEOUT_MS) and
// beats every MCP_PROGRESS_INTERVAL_SECONDS (shorter). With a request
// timeout that progress resets, create_instance succeeds; without it the
// same call times out (so the first proves the progress did it); as an MCP
// task it is polled to its result. Prints {"ok":true,...}.
import assert from "node:assert/strict";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect } from "./sdk.mjs";

const [mode, target, workspace] = process.argv.slice(2);
const timeout = Number(process.env.TIMEOUT_MS);
const { client } = await connect({ name: "sbf-longcalls", mode, target, serverArgs: ["mcp", "-C", workspace] });

// An agent lists the tools first: the SDK learns which run as tasks from it.
const listed = (await client.listTools()).tools;
assert.ok(listed.find((t) => t.name === "create_instance")?.execution?.taskSupport === "optional",
  "create_instance runs as a task");

const progress = [];
const created = await client.callTool({ name: "create_instance", arguments: { workspace_root: workspace } },
  CallToolResultSchema, { timeout, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p) });
assert.ok(!created.isError, JSON.stringify(created));
assert.equal(created.structuredContent.status, "running", JSON.stringify(created));
assert.ok(progress.length >= 3, `progress: ${JSON.stringify(progress)}`);
assert.ok(progress.some((p) => /waiting for: .*create/.test(p.message)), `no beat names the create: ${JSON.stringify(progress)}`);
for (let i = 1; i < progress.length; i++) {
  assert.ok(progress[i].progress > progress[i - 1].progress, `progress must grow: ${JSON.stringify(progress)}`);
}

let timedOut = false;
try {
  await client.callTool({ name: "create_instance", arguments: { workspace_root: workspace } },
    CallToolResultSchema, { timeout });
} catch (e) {
  timedOut = /timed out/i.test(String(e));
}
assert.ok(timedOut, "without progress the same call should have timed out");

let result;
const kinds = [];
for await (const message of client.experimental.tasks.callToolStream(
  { name: "create_instance", arguments: { workspace_root: workspace } }, CallToolResultSchema, { timeout })) {
  kinds.push(message.type);
  if (message.type === "result") result = message.result;
  if (message.type === "error") throw message.error;
}
assert.ok(kinds[0] === "taskCreated", `stream: ${kinds}`);
assert.equal(result?.structuredContent?.status, "running", JSON.stringify(result));

console.log(JSON.stringify({ ok: true, progress: progress.length, task: kinds,
  instance: result.structuredContent.instance_id }));
await client.close();
