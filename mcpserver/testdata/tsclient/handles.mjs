// Issue 39's attacks on handles, made with the official TypeScript SDK by
// clients of one `sbf serve` (escape/handles_test.go runs this):
//   ESC_TARGET=URL ESC_TOKEN=<bearer token> ESC_WS=<the served workspace>
//   ESC_CANARY=<a folder outside it> node handles.mjs
// The server serves ws, and ws/a is a workspace of its own. The owner
// declares roots [ws]; the attacker [ws/a] (its instance there is its own);
// the blind client declares roots and fails roots/list. With the ids of
// the owner's exec session and MCP task (mcp-go broadcasts task ids to
// every client), the attacker writes a command into the session, reads it,
// signals and closes it, cancels the task, and subscribes to the owner's
// workspace resource and to a host file: each is refused in the words an
// unknown id gets, and the owner's session and task carry on. The server
// caps sessions at 1 per workspace: the owner's does not take the
// attacker's place. Any failed expectation throws, and node exits non-zero.
import assert from "node:assert/strict";
import path from "node:path";
import { connect } from "./sdk.mjs";
import {
  CallToolResultSchema, CreateTaskResultSchema, EmptyResultSchema, GetTaskResultSchema, CancelTaskResultSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const env = process.env;
const [target, ws, canary] = [env.ESC_TARGET, env.ESC_WS, env.ESC_CANARY];
assert.ok(target && ws && canary && env.ESC_TOKEN, "ESC_* variables are missing");
const headers = { Authorization: "Bearer " + env.ESC_TOKEN };

// client connects over HTTP with MCP roots (roots null: roots/list fails).
async function client(name, roots) {
  return connect({ name, mode: "http", target, headers, options: { capabilities: { roots: {} } },
    setup: (c) => c.setRequestHandler(ListRootsRequestSchema, async () => {
      if (!roots) throw new Error("no roots for you");
      return { roots: roots.map((r) => ({ uri: "file://" + r })) };
    }) });
}
const owner = await client("owner", [ws]);
const attacker = await client("attacker", [path.join(ws, "a")]);
const blind = await client("blind", null);

// rpcError is the message of a refused raw request ("" when it succeeded).
async function rpcError(c, method, params, schema = EmptyResultSchema) {
  try {
    await c.client.request({ method, params }, schema);
    return "";
  } catch (e) {
    return String(e.message).replaceAll(params.taskId ?? params.uri ?? "\0", "ID");
  }
}
// sameAsUnknown checks an attack got exactly what an id never made gets.
function sameAsUnknown(got, never, what) {
  const strip = (r, id) => JSON.stringify(r).replaceAll(id, "ID");
  assert.equal(got.isError, true, `${what} succeeded: ${JSON.stringify(got.body)}`);
  assert.equal(strip(got.body, got.id), strip(never.body, never.id), what);
}

// 1. The owner's shell session in ws.
const id = (await owner.ok("create_instance", { workspace_root: ws, ttl_minutes: 15 })).instance_id;
const session = (await owner.ok("start_session", { instance_id: id, argv: ["sh"] })).session_id;

// 2. The attacker works the session: input (the sim runs it on this host),
//    a read, a signal, a close. Each answer is the unknown id's.
const neverID = "sess_000000000000";
const never = { id: neverID, body: (await attacker.call("read_session", { session_id: neverID })).body };
for (const [tool, args] of [["write_session", { data: `touch ${canary}/pwned-by-session\n` }],
  ["read_session", {}], ["signal_session", { signal: "KILL" }], ["close_session", {}]]) {
  const got = await attacker.call(tool, { ...args, session_id: session });
  sameAsUnknown({ ...got, id: session }, never, `${tool} on the owner's session`);
  assert.equal(never.body.error_code, "SESSION_NOT_FOUND");
  await blind.fails(tool, { ...args, session_id: session }, "WORKSPACE_NOT_ALLOWED");
}

// 3. The session cap is per workspace: the owner holds ws's only place,
//    and the attacker's workspace still has its own.
await owner.fails("start_session", { instance_id: id, argv: ["true"] }, "SESSION_LIMIT_EXCEEDED");
const mine = (await attacker.ok("create_instance", { workspace_root: path.join(ws, "a"), ttl_minutes: 15 }));
const own = (await attacker.ok("start_session", { instance_id: mine.instance_id, argv: ["true"] })).session_id;
await attacker.ok("close_session", { session_id: own });

// 4. The owner's session carries on, and ran only the owner's input.
await owner.ok("write_session", { session_id: session, data: "echo still-mine; exit 3\n", close_stdin: true });
let text = "";
for (let cursor = 0, end = Date.now() + 30000; ;) {
  const out = await owner.ok("read_session", { session_id: session, cursor, wait_ms: 2000 });
  for (const e of out.events) {
    text += e.text;
    cursor += Buffer.byteLength(e.text);
  }
  if (out.done) {
    assert.equal(out.exit.exit_code, 3, JSON.stringify(out));
    break;
  }
  assert.ok(Date.now() < end, `the owner's session: ${text}`);
}
assert.equal(text, "still-mine\n");

// 5. An MCP task of the owner's: the attacker's tasks/cancel is refused as
//    an unknown id's, and the owner's create runs to its end.
const task = (await owner.client.request({ method: "tools/call", params: { name: "create_instance",
  arguments: { workspace_root: ws, ttl_minutes: 15 }, task: { ttl: 600000 } } }, CreateTaskResultSchema)).task;
const unknownTask = await rpcError(attacker, "tasks/cancel", { taskId: "00000000-0000-0000-0000-000000000000" },
  CancelTaskResultSchema);
assert.ok(unknownTask, "cancelling an unknown task succeeded");
assert.equal(await rpcError(attacker, "tasks/cancel", { taskId: task.taskId }, CancelTaskResultSchema), unknownTask);
assert.equal(await rpcError(attacker, "tasks/get", { taskId: task.taskId }, GetTaskResultSchema), unknownTask);
let status;
for (const end = Date.now() + 60000; ; await new Promise((r) => setTimeout(r, 100))) {
  status = (await owner.client.request({ method: "tasks/get", params: { taskId: task.taskId } },
    GetTaskResultSchema)).status;
  if (status !== "working" || Date.now() > end) break;
}
assert.equal(status, "completed", "the owner's task");
const result = await owner.client.request({ method: "tasks/result", params: { taskId: task.taskId } },
  CallToolResultSchema);
assert.ok(!result.isError && result.structuredContent?.status === "running", JSON.stringify(result));

// 6. Subscriptions: the owner's workspace resource and a host file are
//    answered as a made-up resource is (acknowledged, as the protocol asks,
//    and watched by nothing: mcpserver's TestSubscriptionsOnlyToResources…).
const resources = (await owner.client.listResources()).resources;
const theirs = resources.find((r) => r.name === `sandboxes of ${ws}`)?.uri;
assert.ok(theirs, JSON.stringify(resources));
const madeUp = await rpcError(attacker, "resources/subscribe", { uri: "sbf://workspaces/ws_000000000000/sandboxes" });
assert.equal(madeUp, "", "a made-up resource's subscription is acknowledged");
for (const uri of [theirs, "file:///etc/passwd", `file://${canary}/secret`]) {
  assert.equal(await rpcError(attacker, "resources/subscribe", { uri }), madeUp, `subscribing to ${uri}`);
}
assert.notEqual(await rpcError(blind, "resources/subscribe", { uri: theirs }), "", "the blind client subscribed");
assert.equal(await rpcError(owner, "resources/subscribe", { uri: theirs }), "", "the owner's own subscription");

for (const c of [owner, attacker, blind]) await c.client.close();
console.log(JSON.stringify({ ok: true }));
