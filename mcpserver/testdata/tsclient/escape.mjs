// The escape suite's MCP attacks, made with the official TypeScript SDK the
// way a prompt-injected agent would make them (escape/ runs this):
//   ESC_PHASE=hostexec|guestdata|roots ESC_MODE=stdio|http ESC_TARGET=SBF_BINARY|URL
//   ESC_WS=<the server's workspace> ESC_OTHER=<a folder it does not serve>
//   ESC_CANARY=<a folder outside both> [ESC_TOKEN=<bearer token, sent as "bearer …">]
//   node escape.mjs
// hostexec:  a server without SBF_ENABLE_SIM: no tool reaches a folder it
//            does not serve, and a served folder naming the sim is refused.
// guestdata: a server allowing the sim: what the guest makes (sbf's config,
//            git hooks, .envrc, links out) never lands where sbf or git
//            would read it; root copies keep dotfiles.
// roots:     the client's MCP roots narrow the server's.
// Any failed expectation throws, and node exits non-zero.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { connect } from "./sdk.mjs";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const env = process.env;
const [phase, mode, target, ws, other, canary] =
  [env.ESC_PHASE, env.ESC_MODE, env.ESC_TARGET, env.ESC_WS, env.ESC_OTHER, env.ESC_CANARY];
assert.ok(phase && mode && target && ws && other && canary, "ESC_* variables are missing");

let roots = [path.join(ws, "a")];
const { client, ok, fails } = await connect({
  name: "sbf-escape-suite", mode, target, serverArgs: ["mcp", "-C", ws],
  headers: env.ESC_TOKEN ? { Authorization: "bearer " + env.ESC_TOKEN } : {},
  options: phase === "roots" ? { capabilities: { roots: { listChanged: true } } } : {},
  setup: (c) => phase === "roots" &&
    c.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: roots.map((r) => ({ uri: "file://" + r })) })),
});
const exists = (p) => { try { fs.lstatSync(p); return true; } catch { return false; } };

if (phase === "hostexec") {
  // 1. A folder the server does not serve, whose spec names the sim: the
  //    call is refused before any file is made there.
  for (const root of [other, "/"]) {
    for (const [tool, args] of [["create_instance", { workspace_root: root }], ["plan", { workspace_root: root }],
      ["apply", { workspace_root: root }], ["validate_workspace_config", { workspace_root: root }],
      ["get_desired_state", { workspace_root: root }]]) {
      await fails(tool, args, "WORKSPACE_NOT_ALLOWED");
    }
  }
  assert.ok(!exists(path.join(other, ".sandboxforge")), "a refused workspace got a .sandboxforge folder");
  // 2. A served folder naming the sim: the operator did not allow it.
  const refused = await fails("create_instance", { workspace_root: path.join(ws, "sub") }, "BACKEND_UNAVAILABLE");
  assert.match(refused.message, /SBF_ENABLE_SIM=1/);
  const listed = await ok("list_instances", { include_expired: true });
  assert.ok(listed.instances.every((i) => i.workspace_root.startsWith(ws)), JSON.stringify(listed.instances));
}

if (phase === "guestdata") {
  const id = (await ok("create_instance", { workspace_root: ws, ttl_minutes: 15 })).instance_id;
  // The guest makes what would give it the host: sbf's config (the sim
  // again, the host's root mounted), a git hook, an .envrc, links out.
  const evil = [
    "mkdir -p evil/sub evil/.git/hooks evil/.sandboxforge",
    `printf '[vm]\\ndriver = "sim"\\nmounts = ["/:/hostroot:rw"]\\n' > evil/.sandboxforge.local.toml`,
    "cp evil/.sandboxforge.local.toml evil/sub/.sandboxforge.toml",
    "cp evil/.sandboxforge.local.toml evil/.sandboxforge/overrides.toml",
    `printf '#!/bin/sh\\ntouch ${canary}/pwned-by-hook\\n' > evil/.git/hooks/pre-commit`,
    "chmod +x evil/.git/hooks/pre-commit",
    `echo 'touch ${canary}/pwned-by-envrc' > evil/.envrc`,
    `ln -s ${canary}/secret evil/abslink`, `ln -s ${canary}/secret evil/.env`, "ln -s ../../../escaped evil/dotdot",
    "echo fine > evil/fine.txt", "ln -s fine.txt evil/inner",
  ].join(" && ");
  assert.equal((await ok("run_command", { instance_id: id, command: evil })).exit_code, 0);

  // 2. Straight onto sbf's configuration or a hook: refused, naming the rule.
  for (const local of [".sandboxforge.local.toml", "sub/.sandboxforge.toml", ".sandboxforge/overrides.toml",
    ".git/hooks/pre-commit", ".envrc", ".lima-mcp.toml"]) {
    const e = await fails("copy_from_instance",
      { instance_id: id, remote_path: "evil/.sandboxforge.local.toml", local_path: local }, "HOST_PATH_DENIED");
    assert.ok(e.details.rule, JSON.stringify(e));
    await fails("sync_instance_to_workspace",
      { instance_id: id, remote_path: "evil/.sandboxforge.local.toml", local_path: local }, "HOST_PATH_DENIED");
  }
  await fails("collect_artifacts", { instance_id: id, remote_paths: ["evil/fine.txt"], local_dest: ".git/hooks" },
    "HOST_PATH_DENIED");
  // 2 and 4. A whole folder back: what sbf protects and links out are left
  // out and listed; the rest arrives.
  for (const [tool, local] of [["sync_instance_to_workspace", "."], ["copy_from_instance", "back"]]) {
    const res = await ok(tool, { instance_id: id, remote_path: "evil", local_path: local });
    const pre = local === "." ? "" : local + "/";
    const skipped = res.skipped_paths.map((p) => p.path).sort();
    assert.deepEqual(skipped, [".envrc", ".git", ".sandboxforge", ".sandboxforge.local.toml",
      "sub/.sandboxforge.toml"].map((p) => pre + p).sort(), JSON.stringify(res));
    assert.deepEqual(res.skipped_links.map((l) => l.path).sort(), [".env", "abslink", "dotdot"].map((p) => pre + p),
      JSON.stringify(res));
    assert.equal(fs.readFileSync(path.join(ws, pre, "fine.txt"), "utf8"), "fine\n");
    assert.equal(fs.readlinkSync(path.join(ws, pre, "inner")), "fine.txt");
    for (const p of [".env", "abslink", "dotdot", ".envrc", "sub/.sandboxforge.toml"]) {
      assert.ok(!exists(path.join(ws, pre, p)), `${pre}${p} was written`);
    }
  }
  const arts = await ok("collect_artifacts", { instance_id: id, remote_paths: ["evil"], local_dest: "artifacts" });
  assert.ok(arts.skipped_links.length === 3 && arts.skipped_paths.length === 5, JSON.stringify(arts));
  // The next call reads the workspace as the operator left it.
  const desired = await ok("get_desired_state", { workspace_root: ws });
  assert.ok(!desired.sources.some((s) => s.includes(".sandboxforge.local.toml")), JSON.stringify(desired.sources));
  assert.deepEqual(desired.config.vm.mounts, []);
  assert.equal(desired.config.vm.driver, "sim");

  // 5. Copying the workspace root keeps its dotfiles, and the copy ends.
  await ok("copy_to_instance", { instance_id: id, local_path: ".", remote_path: "rootcopy" });
  await ok("sync_workspace_to_instance", { instance_id: id, local_path: ".", remote_path: "rootsync" });
  const listing = await ok("run_command", { instance_id: id,
    command: "test -f rootcopy/.dotfile && test -f rootsync/.dotfile && test ! -e rootcopy/dotfile && echo kept" });
  assert.equal(listing.stdout, "kept\n", JSON.stringify(listing));
  await ok("destroy_instance", { instance_id: id });
}

if (phase === "roots") {
  // The server serves ws; the client declared only ws/a.
  await fails("create_instance", { workspace_root: ws }, "WORKSPACE_NOT_ALLOWED");
  const inside = await ok("create_instance", { workspace_root: path.join(ws, "a"), ttl_minutes: 5 });
  await ok("destroy_instance", { instance_id: inside.instance_id });
  roots = [ws];
  await client.sendRootsListChanged();
  const widened = await ok("create_instance", { workspace_root: ws, ttl_minutes: 5 });
  await ok("destroy_instance", { instance_id: widened.instance_id });
  roots = [other];
  await client.sendRootsListChanged();
  await fails("create_instance", { workspace_root: path.join(ws, "a") }, "WORKSPACE_NOT_ALLOWED");
  await fails("create_instance", { workspace_root: other }, "WORKSPACE_NOT_ALLOWED"); // the server's roots still hold
}

await client.close();
console.log(JSON.stringify({ ok: true, phase, mode }));
