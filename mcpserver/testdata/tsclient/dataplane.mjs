// Drives sbf's data-plane tools with the official TypeScript SDK, in two
// phases with a server restart between them:
//   node dataplane.mjs start  stdio SBF_BINARY WORKSPACE STATE_FILE
//   node dataplane.mjs resume http  URL        WORKSPACE STATE_FILE
// start:  create_instance → run_command (exit 42 is a result) → copy in and
//         out → sync with excludes, re-syncs → start_background_task; the
//         ids go to STATE_FILE.
// resume: (a new server) the task still runs → stop_task (-15), its
//         process is gone → collect_artifacts → destroy_instance.
// In stdio mode each phase spawns its own `sbf mcp -C WORKSPACE`, so the
// server of the first phase is gone when the second starts. The workspace
// must use the sim driver: a guest path is a folder of the host there, and
// guest commands run as host processes with that folder as their working
// directory and HOME, so relative guest paths name the same file for the
// file tools and for commands, and a task's pid is a host pid.
// The sim's world (SBF_SIM_WORLD, where it keeps the workspace's VMs)
// lies outside the workspace. Any failed expectation throws, and node
// exits non-zero.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "./sdk.mjs";

const [phase, mode, target, workspace, stateFile] = process.argv.slice(2);
assert.ok(["start", "resume"].includes(phase) && ["stdio", "http"].includes(mode) && stateFile,
  "usage: node dataplane.mjs start|resume stdio|http SBF_BINARY|URL WORKSPACE STATE_FILE");

const { client, transport, ok, fails } = await connect({ name: "sbf-ts-sdk-dataplane-test", mode, target,
  serverArgs: ["mcp", "-C", workspace] });

// sh runs a guest command that must exit 0 and returns its stdout.
async function sh(id, command) {
  const res = await ok("run_command", { instance_id: id, command });
  assert.equal(res.exit_code, 0, `${command}: ${JSON.stringify(res)}`);
  return res.stdout;
}

const ws = (...p) => path.join(workspace, ...p);

function write(rel, content) {
  fs.mkdirSync(path.dirname(ws(rel)), { recursive: true });
  fs.writeFileSync(ws(rel), content);
}

// tree maps every file below dir to its content.
function tree(dir) {
  const out = {};
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) {
      const p = path.join(e.parentPath ?? e.path, e.name);
      out[path.relative(dir, p)] = fs.readFileSync(p, "utf8");
    }
  }
  return out;
}

// alive says whether a host process exists and is not a zombie.
function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return true; // no /proc: kill -0 is the answer
  }
}

async function eventually(what, cond, ms = 10000) {
  for (const end = Date.now() + ms; !(await cond()); await sleep(100)) {
    assert.ok(Date.now() < end, `timed out waiting for ${what}`);
  }
}

// world names a path of the sim's world.
const world = (...parts) => path.join(process.env.SBF_SIM_WORLD, ...parts);

const ticks = (logs) => (logs.match(/^tick \d+$/gm) ?? []).length;

const summary = { ok: true, phase, mode };

if (phase === "start") {
  // 1. An ad-hoc instance.
  const created = await ok("create_instance", { workspace_root: workspace, ttl_minutes: 15 });
  assert.equal(created.status, "running");
  const id = created.instance_id;
  assert.match(id, /^inst_[0-9a-f]{8}$/);
  const simName = created.backend_instance_name;
  assert.ok(fs.existsSync(world("instances", simName + ".json")), "the sim holds the instance");
  // As v1: created_at is the lease start (the TTL before expires_at, however long the boot);
  // list_instances names the workspace's backend with its version, and last_used_at is set.
  assert.equal(Date.parse(created.expires_at) - Date.parse(created.created_at), 15 * 60 * 1000,
    JSON.stringify(created));
  const listedAfterCreate = await ok("list_instances", {});
  assert.equal(listedAfterCreate.backend, "sim", JSON.stringify(listedAfterCreate));
  assert.equal(listedAfterCreate.backend_available, true);
  assert.equal(typeof listedAfterCreate.backend_version, "string");
  const row = listedAfterCreate.instances.find((i) => i.instance_id === id);
  assert.ok(row && row.last_used_at && row.created_at === created.created_at, JSON.stringify(row));
  // Schemas say what the server does: unknown arguments are accepted (with a warning), defaults stated.
  const tools = (await client.listTools()).tools;
  for (const t of tools) {
    assert.notEqual(t.inputSchema.additionalProperties, false, `${t.name} refuses unknown arguments`);
  }
  const runSchema = tools.find((t) => t.name === "run_command").inputSchema;
  assert.equal(runSchema.properties.timeout_seconds.default, 600);
  const extra = await ok("run_command", { instance_id: id, command: "true", v1_only_flag: true });
  assert.ok(extra.warnings.some((w) => w.includes("v1_only_flag")), JSON.stringify(extra));

  // 2. A non-zero exit is a result, not a tool error; output is captured.
  const run = await ok("run_command", { instance_id: id, command: "echo to-stdout; echo to-stderr >&2; exit 42" });
  assert.equal(run.exit_code, 42, JSON.stringify(run));
  assert.equal(run.stdout, "to-stdout\n");
  assert.equal(run.stderr, "to-stderr\n");
  assert.equal(run.timed_out, false);
  assert.equal(run.command, "echo to-stdout; echo to-stderr >&2; exit 42");
  const envRun = await ok("run_command", { instance_id: id, command: 'printf "%s" "$GREETING"', env: { GREETING: "hi there" } });
  assert.equal(envRun.stdout, "hi there");

  // 3. copy_to_instance a folder and a file; copy_from_instance back to
  // other workspace paths; the contents match.
  write("in/data/a.txt", "alpha\n");
  write("in/data/sub/b.txt", "beta\n");
  write("in/note.txt", "a single file\n");
  const copiedIn = await ok("copy_to_instance", { instance_id: id, local_path: "in/data", remote_path: "copied/data" });
  assert.deepEqual(copiedIn, { instance_id: id, local_path: "in/data", remote_path: "copied/data", status: "ok" });
  await ok("copy_to_instance", { instance_id: id, local_path: ws("in/note.txt"), remote_path: "copied/note.txt" });
  assert.equal(await sh(id, "cat copied/data/a.txt copied/data/sub/b.txt copied/note.txt"), "alpha\nbeta\na single file\n");
  await sh(id, "echo made in the guest > copied/data/sub/c.txt");
  await ok("copy_from_instance", { instance_id: id, remote_path: "copied/data", local_path: "out/data-back" });
  await ok("copy_from_instance", { instance_id: id, remote_path: "copied/note.txt", local_path: ws("out/note-back.txt") });
  assert.deepEqual(tree(ws("out/data-back")), { ...tree(ws("in/data")), [path.join("sub", "c.txt")]: "made in the guest\n" });
  assert.equal(fs.readFileSync(ws("out/note-back.txt"), "utf8"), "a single file\n");
  await fails("copy_to_instance", { instance_id: id, local_path: "in/missing", remote_path: "x" }, "BACKEND_COMMAND_FAILED");

  // 4. sync_workspace_to_instance: the given excludes replace the
  // config's, .git is still left out; a re-sync sends only changes.
  write("proj/keep.txt", "v1\n");
  write("proj/src/main.go", "package main\n");
  write("proj/node_modules/dep/index.js", "module.exports = 1\n");
  write("proj/build.log", "noise\n");
  write("proj/src/debug.log", "noise\n");
  write("proj/.git/HEAD", "ref: refs/heads/main\n");
  const sync = { instance_id: id, local_path: "proj", remote_path: "synced/proj", exclude: ["node_modules", "*.log"] };
  const first = await ok("sync_workspace_to_instance", sync);
  assert.deepEqual(first.exclude, ["node_modules", "*.log", ".git"]);
  assert.equal(first.status, "ok");
  assert.equal(first.files_sent, 2, JSON.stringify(first));
  assert.ok(first.archive_bytes > 0);
  assert.equal(await sh(id, "cat synced/proj/keep.txt synced/proj/src/main.go"), "v1\npackage main\n");
  assert.equal(await sh(id, "for p in node_modules build.log src/debug.log .git; do test -e synced/proj/$p && echo $p; done; true"), "",
    "excluded paths reached the guest");

  const again = await ok("sync_workspace_to_instance", sync);
  assert.equal(again.files_sent, 0, JSON.stringify(again));
  assert.equal(again.files_unchanged, 2);
  assert.equal(again.files_deleted, 0);

  write("proj/keep.txt", "v2\n");
  write("proj/more.log", "excluded too\n");
  fs.rmSync(ws("proj/src/main.go"));
  const changed = await ok("sync_workspace_to_instance", sync);
  assert.deepEqual([changed.files_sent, changed.files_unchanged, changed.files_deleted], [1, 0, 1], JSON.stringify(changed));
  assert.equal(await sh(id, "cat synced/proj/keep.txt; test -e synced/proj/src/main.go || echo main.go gone; test -e synced/proj/more.log || echo more.log excluded"),
    "v2\nmain.go gone\nmore.log excluded\n");

  // 5. A background task writing to its log; it must outlive this server.
  const command = 'i=0; while :; do i=$((i+1)); echo "tick $i"; echo "$i" > ticks.txt; sleep 0.1; done';
  await sh(id, "mkdir -p work");
  const task = await ok("start_background_task", { instance_id: id, command, cwd: "work" });
  assert.match(task.task_id, /^task_[0-9a-f]{12}$/);
  assert.equal(task.status, "running");
  assert.equal(task.instance_id, id);
  assert.ok(Number.isInteger(task.pid) && task.pid > 0, JSON.stringify(task));
  // Saved at once, so the test can end the task should this phase fail.
  const save = (more) => fs.writeFileSync(stateFile, JSON.stringify({
    instance_id: id, sim_name: simName, task_id: task.task_id, task_pid: task.pid,
    server_pid: mode === "stdio" ? transport.pid : null, ...more,
  }));
  save({});
  await fails("start_background_task", { instance_id: "inst_00000000", command: "true" }, "INSTANCE_NOT_FOUND");
  let logs = "";
  await eventually("the task's first ticks", async () => {
    logs = (await ok("get_task_logs", { task_id: task.task_id })).logs;
    return ticks(logs) >= 3;
  });
  assert.ok(alive(task.pid), "the task's process runs");

  save({ ticks_before: ticks(logs) });
  Object.assign(summary, { instance: id, task: task.task_id });
} else {
  const saved = JSON.parse(fs.readFileSync(stateFile, "utf8"));
  const id = saved.instance_id;
  if (saved.server_pid) {
    assert.notEqual(transport.pid, saved.server_pid, "a new server process");
    assert.ok(!alive(saved.server_pid), `the first server (pid ${saved.server_pid}) is gone`);
  }

  // 5 (continued). The new server finds the task, still running, its log
  // still growing.
  const status = await ok("get_task_status", { task_id: saved.task_id });
  assert.equal(status.status, "running", JSON.stringify(status));
  assert.equal(status.instance_id, id);
  assert.equal(status.pid, saved.task_pid);
  assert.equal(status.exit_code, null);
  assert.equal(status.finished_at, null);
  assert.ok(status.started_at && status.created_at);
  await eventually("the task's log to grow after the restart", async () => {
    const res = await ok("get_task_logs", { task_id: saved.task_id, tail: 0 });
    return ticks(res.logs) > saved.ticks_before;
  });
  const tail = await ok("get_task_logs", { task_id: saved.task_id, tail: 2 });
  assert.equal(tail.tail, 2);
  assert.equal(tail.status, "running");
  assert.equal(tail.logs.trimEnd().split("\n").length, 2, JSON.stringify(tail));
  // The task rewrites ticks.txt ten times a second: a read may catch it empty.
  await eventually("the task's ticks.txt in its cwd", async () => /^\d+\n$/.test(await sh(id, "cat work/ticks.txt")));

  const stopped = await ok("stop_task", { task_id: saved.task_id });
  assert.deepEqual(stopped, { task_id: saved.task_id, instance_id: id, status: "stopped", exit_code: -15 });
  const after = await ok("get_task_status", { task_id: saved.task_id });
  assert.equal(after.status, "stopped");
  assert.equal(after.exit_code, -15);
  assert.ok(after.finished_at, JSON.stringify(after));
  await eventually(`the task's process (pid ${saved.task_pid}) to end`, () => !alive(saved.task_pid), 5000);
  const logsThen = (await ok("get_task_logs", { task_id: saved.task_id, tail: 0 })).logs;
  await sleep(500);
  const logsNow = (await ok("get_task_logs", { task_id: saved.task_id, tail: 0 })).logs;
  assert.equal(ticks(logsNow), ticks(logsThen), "the log stopped growing");
  await fails("stop_task", { task_id: saved.task_id }, "TASK_ALREADY_FINISHED");
  await fails("get_task_status", { task_id: "task_000000000000" }, "TASK_NOT_FOUND");

  // 6. collect_artifacts into a folder that does not exist yet; a second
  // report.txt becomes 1-report.txt (v1's naming), a folder comes whole.
  await sh(id, "mkdir -p results/logs other && echo first > results/report.txt && echo second > other/report.txt && echo log > results/logs/run.log");
  assert.ok(!fs.existsSync(ws("artifacts")));
  const collected = await ok("collect_artifacts", {
    instance_id: id, remote_paths: ["results/report.txt", "other/report.txt", "results/logs"], local_dest: "artifacts/run1",
  });
  const dest = ws("artifacts/run1");
  assert.equal(collected.local_dest, dest);
  assert.deepEqual(collected.artifacts, [
    { remote_path: "results/report.txt", local_path: path.join(dest, "report.txt") },
    { remote_path: "other/report.txt", local_path: path.join(dest, "1-report.txt") },
    { remote_path: "results/logs", local_path: path.join(dest, "logs") },
  ]);
  assert.deepEqual(tree(dest), { "report.txt": "first\n", "1-report.txt": "second\n", [path.join("logs", "run.log")]: "log\n" });
  // v1's code for an empty list
  await fails("collect_artifacts", { instance_id: id, remote_paths: [], local_dest: "artifacts/run2" },
    "BACKEND_COMMAND_FAILED");

  // 7. destroy_instance: the instance is no longer listed, and the sim's
  // record of it and its guest folder are gone.
  const destroyed = await ok("destroy_instance", { instance_id: id });
  assert.equal(destroyed.status, "destroyed");
  const listed = await ok("list_instances", {});
  assert.ok(!listed.instances.some((i) => i.instance_id === id), JSON.stringify(listed));
  assert.ok(!fs.existsSync(world("instances", saved.sim_name + ".json")), "the sim's instance record is gone");
  assert.ok(!fs.existsSync(world("guests", saved.sim_name)), "the sim's guest folder is gone");
  await fails("run_command", { instance_id: id, command: "true" }, "INSTANCE_TERMINAL");
  Object.assign(summary, { instance: id, task: saved.task_id, artifacts: collected.artifacts.length });
}

await client.close();
console.log(JSON.stringify(summary));
