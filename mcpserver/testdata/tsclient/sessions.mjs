// Drives issue 31's exec sessions with the official TypeScript SDK:
//   node sessions.mjs stdio SBF_BINARY WORKSPACE
// python3 -i (when the host has python3: the sim's guest is this host) is
// written to and read from with a cursor, each read starting where the
// last ended, and closed; a shell command is interrupted with
// signal_session and its exit read; a closed session is SESSION_NOT_FOUND.
// Any failed expectation throws, and node exits non-zero.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { connect } from "./sdk.mjs";

const [mode, target, workspace] = process.argv.slice(2);
assert.ok(mode === "stdio" && workspace, "usage: node sessions.mjs stdio SBF_BINARY WORKSPACE");
const { client, ok, fails } = await connect({ name: "sbf-ts-sdk-sessions-test", mode, target,
  serverArgs: ["mcp", "-C", workspace] });

// readUntil reads the session from its cursor until want was printed (or
// the command is done), with wait_ms so no read spins.
async function readUntil(s, want) {
  for (const end = Date.now() + 30000; ;) {
    const out = await ok("read_session", { session_id: s.id, cursor: s.cursor, max_bytes: 7, wait_ms: 2000 });
    assert.equal(out.cursor, s.cursor);
    assert.equal(out.dropped_bytes, 0);
    for (const e of out.events) {
      assert.equal(e.offset, s.cursor, `event ${JSON.stringify(e)} after cursor ${s.cursor}`);
      s.text[e.stream] = (s.text[e.stream] ?? "") + e.text;
      s.cursor += Buffer.byteLength(e.text);
    }
    assert.equal(out.next_cursor, s.cursor);
    if (`${s.text.stdout ?? ""}${s.text.stderr ?? ""}`.includes(want) || out.done) {
      return out;
    }
    assert.ok(Date.now() < end, `no ${JSON.stringify(want)} in ${JSON.stringify(s.text)}`);
  }
}

async function start(args) {
  const out = await ok("start_session", args);
  assert.equal(out.status, "running");
  return { id: out.session_id, cursor: 0, text: {} };
}

const id = (await ok("create_instance", { workspace_root: workspace })).instance_id;
let python = true;
try {
  execFileSync("python3", ["-c", "pass"]);
} catch {
  python = false;
}
if (python) {
  const py = await start({ instance_id: id, argv: ["python3", "-i", "-q", "-u"] });
  await ok("write_session", { session_id: py.id, data: "x = 6 * 7\nprint(x, 'é')\n" });
  await readUntil(py, "42 é\n");
  await ok("write_session", { session_id: py.id, data: "import sys; print('on stderr', file=sys.stderr)\n" });
  await readUntil(py, "on stderr\n");
  assert.ok(py.text.stdout.includes("42 é\n") && py.text.stderr.includes("on stderr\n"), JSON.stringify(py.text));
  const closed = await ok("close_session", { session_id: py.id });
  assert.equal(closed.closed, true);
  await fails("read_session", { session_id: py.id }, "SESSION_NOT_FOUND");
}

const sh = await start({ instance_id: id,
  command: "trap 'echo caught; exit 9' INT; echo armed; while :; do sleep 0.1; done" });
await readUntil(sh, "armed\n");
assert.equal((await ok("signal_session", { session_id: sh.id, signal: "INT" })).delivered, "signal");
const end = await readUntil(sh, "\u0000");
assert.equal(end.done, true);
assert.equal(end.exit.exit_code, 9);
assert.equal(sh.text.stdout, "armed\ncaught\n");
await ok("close_session", { session_id: sh.id });
await ok("destroy_instance", { instance_id: id });
await client.close();
console.log(JSON.stringify({ ok: true, python }));
