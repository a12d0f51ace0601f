// Issue 29, attack 1, made with the official TypeScript SDK (escape/ runs
// this): the guest plants a git repository whose config runs a command
// (core.fsmonitor, core.worktree = ., core.hooksPath) and syncs it back,
// into a folder and onto the workspace root; then validate_image with that
// folder as workspace_root and docker_build read the workspace's git state.
//   ESC_MODE=stdio|http ESC_TARGET=SBF_BINARY|URL ESC_WS=<workspace>
//   ESC_CANARY=<a folder outside it> ESC_MARKER=<what the command would make>
//   ESC_PLANT=root|dotgit   node gitstate.mjs
// root:   the workspace has no .git: the guest's files land at its root too.
// dotgit: the workspace's own .git/config already names the command (what
//         a writable mount or earlier tooling could leave).
// Any failed expectation throws, and node exits non-zero.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { connect } from "./sdk.mjs";

const env = process.env;
const [mode, target, ws, marker, plant] = [env.ESC_MODE, env.ESC_TARGET, env.ESC_WS, env.ESC_MARKER, env.ESC_PLANT];
assert.ok(mode && target && ws && marker && plant, "ESC_* variables are missing");
const { client, ok } = await connect({ name: "sbf-escape-gitstate", mode, target, serverArgs: ["mcp", "-C", ws] });
const exists = (p) => { try { fs.lstatSync(p); return true; } catch { return false; } };

const id = (await ok("create_instance", { workspace_root: ws, ttl_minutes: 15 })).instance_id;
const config = ["[core]", "\trepositoryformatversion = 0", "\tbare = false", "\tworktree = .",
  `\tfsmonitor = "touch ${marker}; echo"`, "\thooksPath = hooks"].join("\n");
const planted = [
  "mkdir -p evil/planted/objects/info evil/planted/refs/heads evil/planted/hooks",
  "echo 'ref: refs/heads/main' > evil/planted/HEAD",
  ": > evil/planted/objects/info/packs", ": > evil/planted/refs/heads/.keep",
  `printf '#!/bin/sh\\ntouch %s\\n' '${marker}' > evil/planted/hooks/post-checkout`, "chmod +x evil/planted/hooks/*",
  `cat > evil/planted/config <<'EOF'\n${config}\nEOF`,
].join(" && ");
assert.equal((await ok("run_command", { instance_id: id, command: planted })).exit_code, 0);
await ok("sync_instance_to_workspace", { instance_id: id, remote_path: "evil/planted", local_path: "planted" });
assert.ok(exists(path.join(ws, "planted", "config")), "the planted repository did not arrive");
if (plant === "root") {
  for (const name of ["HEAD", "config", "objects", "refs"]) {
    await ok("copy_from_instance", { instance_id: id, remote_path: `evil/planted/${name}`, local_path: name });
  }
}

// The reads that ran git on the host.
const judged = await ok("validate_image",
  { instance_id: id, image_name: "app:1", workspace_root: path.join(ws, "planted") });
const built = await ok("docker_build", { instance_id: id, context_path: ".", image_tag: "app:1" });
assert.ok(!exists(marker), "the planted command ran on the host");
// Only the workspace's own .git is a repository; the planted folder is no
// workspace of its own, so validate_image reads the one it lies in.
for (const state of [judged.workspace_state, built.workspace_state]) {
  if (plant === "root") {
    assert.equal(state.git_commit, null, JSON.stringify(state));
  } else {
    assert.match(state.git_commit ?? "", /^[0-9a-f]{40}$/, JSON.stringify(state));
  }
}
await ok("destroy_instance", { instance_id: id });
await client.close();
console.log(JSON.stringify({ ok: true, mode, plant }));
