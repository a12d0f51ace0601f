// Drives the tools of issue 24 with the official TypeScript SDK:
//   node agenttools.mjs stdio SBF_BINARY WORKSPACE METRICS_ADDR
//   node agenttools.mjs http  URL        WORKSPACE METRICS_ADDR
// files: write_file (text, base64, mode) → read_file (whole, a piece,
//        base64) → make_dir → list_files (one level, recursive, capped)
//        → stat_path → remove_path;
// ports: a web server started in the guest as a background task is
//        exposed on a loopback port of this host and fetched from here;
//        list_exposed_ports shows it, unexpose_port ends it;
// stats:  get_instance_stats and health;
// resources: resources/list and resources/read of the schema and the
//        workspace's sandboxes and policy;
// metrics: the server's /metrics at METRICS_ADDR (over stdio the server
//        this script starts gets --metrics METRICS_ADDR and --token-file
//        SBF_TOKEN_FILE) is scraped with the bearer token (a scrape
//        without it is refused) and parsed, and counts the calls above;
// history: get_history lists those calls, the workspace's MySQL password
//        (SBF_TS_SECRET, planted in the spec) redacted in a command.
// The workspace must use the sim driver, whose guest shares this host's
// network: the guest's server listens on a port of this host's loopback,
// and expose_port forwards another one to it. Any failed expectation
// throws, and node exits non-zero.
import assert from "node:assert/strict";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { bearer, connect } from "./sdk.mjs";

const [mode, target, workspace, metricsAddr] = process.argv.slice(2);
assert.ok(["stdio", "http"].includes(mode) && metricsAddr,
  "usage: node agenttools.mjs stdio|http SBF_BINARY|URL WORKSPACE METRICS_ADDR");

assert.ok(process.env.SBF_TOKEN_FILE, "SBF_TOKEN_FILE names the bearer token's file");
const { client, call, ok, fails } = await connect({ name: "sbf-ts-sdk-agenttools-test", mode, target,
  serverArgs: ["mcp", "-C", workspace, "--metrics", metricsAddr, "--token-file", process.env.SBF_TOKEN_FILE] });

async function eventually(what, cond, ms = 15000) {
  for (const end = Date.now() + ms; !(await cond()); await sleep(100)) {
    assert.ok(Date.now() < end, `timed out waiting for ${what}`);
  }
}

// freePort asks this host for a port nothing listens on.
function freePort() {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function fetchText(url) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    return await res.text();
  } catch {
    return null;
  }
}

const created = await ok("create_instance", { workspace_root: workspace, ttl_minutes: 15 });
const id = created.instance_id;
const summary = { ok: true, mode, instance: id };

// Files.
const text = "# notes\nhé — ünïcode\n";
const written = await ok("write_file", { instance_id: id, path: "proj/docs/notes.md", content: text, mode: "0640", make_parents: true });
assert.equal(written.bytes_written, Buffer.byteLength(text));
assert.equal(written.mode, "0640");
const read = await ok("read_file", { instance_id: id, path: "proj/docs/notes.md" });
assert.deepEqual([read.content, read.encoding, read.truncated, read.size], [text, "utf8", false, Buffer.byteLength(text)]);
const piece = await ok("read_file", { instance_id: id, path: "proj/docs/notes.md", offset: 2, limit: 5 });
assert.deepEqual([piece.content, piece.truncated, piece.next_offset], ["notes", true, 7]);
const bytes = Buffer.from([0, 159, 146, 150, 255, 10]);
await ok("write_file", { instance_id: id, path: "proj/bin/blob", content: bytes.toString("base64"), encoding: "base64", make_parents: true });
const blob = await ok("read_file", { instance_id: id, path: "proj/bin/blob", encoding: "base64" });
assert.deepEqual(Buffer.from(blob.content, "base64"), bytes);
const seen = await ok("run_command", { instance_id: id, command: "cat proj/docs/notes.md" });
assert.equal(seen.stdout, text, "a command in the guest sees what write_file wrote");
assert.equal((await ok("make_dir", { instance_id: id, path: "proj/empty/deep" })).created, true);
const level = await ok("list_files", { instance_id: id, path: "proj" });
assert.deepEqual(level.entries.map((e) => [e.path, e.type]), [["bin", "directory"], ["docs", "directory"], ["empty", "directory"]]);
const all = await ok("list_files", { instance_id: id, path: "proj", recursive: true });
assert.deepEqual(all.entries.map((e) => e.path), ["bin", "bin/blob", "docs", "docs/notes.md", "empty", "empty/deep"]);
const file = all.entries.find((e) => e.path === "docs/notes.md");
assert.deepEqual([file.type, file.size, file.mode], ["file", Buffer.byteLength(text), "0640"]);
assert.match(file.modified, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
const capped = await ok("list_files", { instance_id: id, path: "proj", recursive: true, limit: 2 });
assert.deepEqual([capped.count, capped.truncated], [2, true]);
const st = await ok("stat_path", { instance_id: id, path: "proj/bin/blob" });
assert.deepEqual([st.exists, st.type, st.size], [true, "file", bytes.length]);
await fails("remove_path", { instance_id: id, path: "proj/docs" }, "GUEST_DIRECTORY_NOT_EMPTY");
assert.equal((await ok("remove_path", { instance_id: id, path: "proj/docs", recursive: true })).removed, true);
assert.equal((await ok("stat_path", { instance_id: id, path: "proj/docs" })).exists, false);
await fails("read_file", { instance_id: id, path: "proj/docs/notes.md" }, "GUEST_PATH_NOT_FOUND");
await fails("read_file", { instance_id: id, path: "proj/bin/blob", encoding: "utf8" }, "INVALID_ARGUMENTS");

// Ports: a web server in the guest, exposed and fetched from this host.
const guestPort = await freePort();
const server = `node -e "require('http').createServer((q, r) => r.end('served from the guest ' + q.url))` +
  `.listen(${guestPort}, '127.0.0.1', () => console.log('listening'))"`;
const task = await ok("start_background_task", { instance_id: id, command: server });
try {
  // A connection the guest refuses is closed at once; fetch would retry
  // it until its timeout, so the test waits for the server first.
  await eventually("the guest's server to listen", async () =>
    (await ok("get_task_logs", { task_id: task.task_id })).logs.includes("listening"));
  const exposed = await ok("expose_port", { instance_id: id, port: guestPort });
  assert.equal(exposed.host, "127.0.0.1");
  assert.ok(Number.isInteger(exposed.host_port) && exposed.host_port !== guestPort, JSON.stringify(exposed));
  assert.equal(exposed.url, `http://127.0.0.1:${exposed.host_port}`);
  assert.equal(await fetchText(exposed.url + "/hello"), "served from the guest /hello");
  const listed = await ok("list_exposed_ports", { instance_id: id });
  assert.equal(listed.count, 1);
  assert.equal(listed.ports[0].host_port, exposed.host_port);
  assert.ok(listed.ports[0].connections >= 1 && listed.ports[0].bytes_out > 0, JSON.stringify(listed));
  const again = await ok("expose_port", { instance_id: id, port: guestPort });
  assert.equal(again.host_port, exposed.host_port, "exposing twice keeps the forward");
  const gone = await ok("unexpose_port", { instance_id: id, port: guestPort });
  assert.equal(gone.status, "unexposed");
  assert.equal(await fetchText(exposed.url + "/again"), null, "the forward is closed");
  await fails("unexpose_port", { instance_id: id, port: guestPort }, "PORT_NOT_EXPOSED");
  await fails("expose_port", { instance_id: id, port: 70000 }, "INVALID_ARGUMENTS");
  summary.host_port = exposed.host_port;
} finally {
  await ok("stop_task", { task_id: task.task_id, force: true });
}

// Stats and health: on the sim the figures are this host's, and say so.
const stats = await ok("get_instance_stats", { instance_id: id });
assert.equal(stats.shared_with_host, true);
assert.ok(stats.cpu.count >= 1 && stats.memory.total_bytes > 0 && stats.disk.total_bytes > 0, JSON.stringify(stats));
assert.ok(stats.lease.seconds_left > 0 && stats.lease.seconds_left <= 900, JSON.stringify(stats.lease));
assert.equal(stats.last_command?.tool, "start_background_task", JSON.stringify(stats.last_command));
const health = await ok("health", { workspace_root: workspace });
assert.equal(health.healthy, true, JSON.stringify(health));
assert.deepEqual(health.sandboxes.map((s) => [s.instance_id, s.status]), [[id, "ok"]]);

// History: the calls above, oldest first, the secret never shown.
const secret = process.env.SBF_TS_SECRET;
assert.ok(secret, "SBF_TS_SECRET names the spec's root_password");
await ok("run_command", { instance_id: id, command: `echo ${secret} > /dev/null`, env: { API_TOKEN: secret } });
const history = await ok("get_history", { instance_id: id, limit: 1000 });
assert.ok(!JSON.stringify(history).includes(secret), "the history shows a secret");
const tools = history.events.map((e) => e.tool);
for (const t of ["create_instance", "write_file", "read_file", "list_files", "remove_path", "expose_port",
  "unexpose_port"]) {
  assert.ok(tools.includes(t), `${t} is not in the history: ${tools}`);
}
const last = history.events.at(-1);
assert.deepEqual([last.tool, last.door, last.command, last.detail, last.exit_code], ["run_command", "mcp", "echo *** > /dev/null", "env=API_TOKEN", 0]);
const failed = history.events.find((e) => e.error_code === "GUEST_PATH_NOT_FOUND");
assert.equal(failed?.tool, "read_file", JSON.stringify(history.events));
assert.ok(history.events.every((e) => e.instance_id === id && e.time), JSON.stringify(history.events[0]));

// Resources: the schema, and this workspace's sandboxes and policy.
const listedResources = (await client.listResources()).resources.map((r) => r.uri);
assert.ok(listedResources.includes("sbf://schema/spec"), JSON.stringify(listedResources));
const inventoryURI = listedResources.find((u) => /^sbf:\/\/workspaces\/ws_[0-9a-f]{12}\/sandboxes$/.test(u));
assert.ok(inventoryURI, JSON.stringify(listedResources));
const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
assert.deepEqual(templates.sort(),
  ["sbf://workspaces/{id}/policy", "sbf://workspaces/{id}/sandboxes", "sbf://workspaces/{id}/snapshots"]);
const readJSON = async (uri) => JSON.parse((await client.readResource({ uri })).contents[0].text);
const schema = await readJSON("sbf://schema/spec");
assert.ok(schema.properties?.vm, "the schema describes [vm]");
const inventory = await readJSON(inventoryURI);
assert.deepEqual(inventory.sandboxes.map((s) => [s.instance_id, s.live_status]), [[id, "running"]]);
const policy = await readJSON(inventoryURI.replace(/sandboxes$/, "policy"));
assert.ok(policy.host_paths.allowed_roots.length >= 1 && policy.ports.bind === "127.0.0.1", JSON.stringify(policy));
await assert.rejects(client.readResource({ uri: "sbf://workspaces/ws_000000000000/policy" }));

// Snapshots and clones: snapshot → change a file → restore → the file is
// back; a clone starts from the source's disk and then goes its own way.
const marker = "snap/marker.txt";
const readMarker = async (inst) => (await ok("read_file", { instance_id: inst, path: marker })).content;
await ok("write_file", { instance_id: id, path: marker, content: "before", make_parents: true });
const snap = await ok("snapshot_instance", { instance_id: id, name: "clean" });
assert.deepEqual([snap.status, snap.name, snap.backend], ["created", "clean", "sim"], JSON.stringify(snap));
await ok("write_file", { instance_id: id, path: marker, content: "after" });
await ok("restore_snapshot", { instance_id: id, name: "clean" });
assert.equal(await readMarker(id), "before", "restore_snapshot brings the file back");
await fails("snapshot_instance", { instance_id: id, name: "clean" }, "SNAPSHOT_EXISTS");
await fails("snapshot_instance", { instance_id: id, name: "../../etc" }, "INVALID_ARGUMENTS");
const snapshots = await readJSON(inventoryURI.replace(/sandboxes$/, "snapshots"));
assert.deepEqual(snapshots.snapshots.map((s) => s.name), ["clean"], JSON.stringify(snapshots));
const clone = await ok("clone_instance", { instance_id: id, ttl_minutes: 15 });
assert.ok(clone.instance_id !== id && clone.source_instance_id === id, JSON.stringify(clone));
assert.equal(await readMarker(clone.instance_id), "before", "the clone starts from the source's disk");
await ok("write_file", { instance_id: clone.instance_id, path: marker, content: "clone" });
assert.deepEqual([await readMarker(id), await readMarker(clone.instance_id)], ["before", "clone"],
  "an instance and its clone share no disk");
await ok("delete_snapshot", { instance_id: id, name: "clean" });
assert.equal((await ok("list_snapshots", { instance_id: id })).count, 0);
await ok("destroy_instance", { instance_id: clone.instance_id });

await ok("destroy_instance", { instance_id: id });

// Metrics: Prometheus's text format, parsed line by line.
function parseMetrics(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/);
    assert.ok(m, `not a sample line: ${line}`);
    const labels = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}
assert.equal((await fetch(`http://${metricsAddr}/metrics`)).status, 401, "a scrape without the token");
const scraped = parseMetrics(await (await fetch(`http://${metricsAddr}/metrics`, { headers: bearer() })).text());
const sample = (name, labels = {}) =>
  scraped.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
assert.equal(sample("sbf_tool_calls_total", { tool: "write_file", code: "ok" }), 5, JSON.stringify(scraped.slice(0, 5)));
assert.equal(sample("sbf_tool_calls_total", { tool: "read_file", code: "GUEST_PATH_NOT_FOUND" }), 1);
assert.equal(sample("sbf_tool_calls_total", { tool: "destroy_instance", code: "ok" }), 2);
assert.equal(sample("sbf_tool_calls_total", { tool: "snapshot_instance", code: "SNAPSHOT_EXISTS" }), 1);
assert.ok(sample("sbf_tool_call_duration_seconds_count", { tool: "run_command" }) >= 2);
assert.equal(sample("sbf_exposed_ports"), 0);
// Both instances are destroyed: their records left the state for the archive, and no sandbox runs.
assert.ok(!scraped.some((s) => s.name === "sbf_sandboxes" && s.labels.phase === "running"), "sandboxes by phase");
await client.close();
console.log(JSON.stringify(summary));
