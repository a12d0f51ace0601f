// What an agent does through the official TypeScript SDK, one step per run:
//   node agent.mjs create  SBF_BINARY WORKSPACE ARGS_JSON   create_instance, progress resetting a 60 s timeout
//   node agent.mjs task    SBF_BINARY WORKSPACE ARGS_JSON   create_instance as an MCP task, polled to its end
//   node agent.mjs session SBF_BINARY WORKSPACE INSTANCE    python3 -i in an exec session, read with a cursor
// Each spawns `sbf -C WORKSPACE mcp $SBF_MCP_ARGS` over stdio and prints one JSON line with "ok":true.
import assert from "node:assert/strict";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect } from "./sdk.mjs";

const [step, binary, workspace, arg] = process.argv.slice(2);
const extra = (process.env.SBF_MCP_ARGS ?? "").split(" ").filter(Boolean);
const { client, ok } = await connect({ name: "sbf-e2e-agent", mode: "stdio", target: binary,
  serverArgs: ["-C", workspace, "mcp", ...extra] });
await client.listTools(); // as an agent does: the SDK learns which tools run as tasks
const started = Date.now();
const out = { ok: true, step };

if (step === "create") {
  const progress = [];
  const res = await client.callTool({ name: "create_instance", arguments: JSON.parse(arg) }, CallToolResultSchema,
    { timeout: 60000, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p.message) });
  assert.ok(!res.isError, JSON.stringify(res));
  out.instance_id = res.structuredContent.instance_id;
  out.backend_instance_name = res.structuredContent.backend_instance_name;
  out.progress = progress.length;
  out.last_progress = progress.slice(-3);
  assert.ok(Date.now() - started < 20000 || progress.some((m) => /still running/.test(m)),
    `a ${Date.now() - started} ms call beat no progress: ${JSON.stringify(progress)}`);
} else if (step === "task") {
  const kinds = [];
  let result;
  for await (const m of client.experimental.tasks.callToolStream(
    { name: "create_instance", arguments: JSON.parse(arg) }, CallToolResultSchema, { timeout: 60000 })) {
    kinds.push(m.type);
    if (m.type === "error") throw m.error;
    if (m.type === "result") result = m.result;
  }
  assert.equal(kinds[0], "taskCreated", JSON.stringify(kinds));
  assert.ok(!result.isError, JSON.stringify(result));
  out.instance_id = result.structuredContent.instance_id;
  out.backend_instance_name = result.structuredContent.backend_instance_name;
  out.polls = kinds.filter((k) => k === "taskStatus").length;
} else if (step === "session") {
  const s = await ok("start_session", { instance_id: arg, command: "python3 -i -q", timeout_seconds: 300 });
  const id = s.session_id;
  let cursor = 0;
  let text = "";
  async function readUntil(want) {
    for (let i = 0; i < 60 && !want.test(text); i++) {
      const r = await ok("read_session", { session_id: id, cursor, wait_ms: 2000 });
      for (const e of r.events ?? []) text += e.text ?? "";
      assert.ok(r.next_cursor >= cursor, `cursor went back: ${JSON.stringify(r)}`);
      cursor = r.next_cursor;
    }
    assert.match(text, want);
  }
  await ok("write_session", { session_id: id, data: "print(6 * 7)\n" });
  await readUntil(/42/);
  await ok("write_session", { session_id: id, data: "import sys; print('to', 'stderr', file=sys.stderr)\n" });
  await readUntil(/to stderr/);
  await ok("close_session", { session_id: id });
  out.cursor = cursor;
} else {
  throw new Error(`unknown step ${step}`);
}
out.elapsed_ms = Date.now() - started;
console.log(JSON.stringify(out));
await client.close();
