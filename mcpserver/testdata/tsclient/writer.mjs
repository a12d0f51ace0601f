// Copy-back attacks of issue 29, made with the official TypeScript SDK as a
// prompt-injected agent would make them (escape/writer_test.go runs this):
//   ESC_PHASE=chain|case|home ESC_MODE=stdio|http ESC_TARGET=SBF_BINARY|URL
//   ESC_WS=<the server's workspace> ESC_CANARY=<a folder outside it>
//   [ESC_HOME=<a data folder the operator allowed>] [ESC_TOKEN=<bearer token>]
//   node writer.mjs
// chain: links a -> ., c -> a/.., d -> c/../<canary>/secret made in the guest
//        and copied back: none may lead out of the workspace.
// case:  .SANDBOXFORGE.local.toml, .GIT/hooks, .ENVRC, GIT~1, .git., an NFD
//        name of a protected NFC pattern: each is the protected file on macOS
//        or Windows, so each is refused or left out.
// home:  with a data folder allowed besides the workspace (the home folder
//        itself cannot be), no hidden file or folder appears there from the
//        guest: not sbf's config, .bashrc, .ssh, .npmrc, .aws, .pth files.
// Any failed expectation throws, and node exits non-zero.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { connect } from "./sdk.mjs";

const env = process.env;
const [phase, mode, target, ws, canary, home] =
  [env.ESC_PHASE, env.ESC_MODE, env.ESC_TARGET, env.ESC_WS, env.ESC_CANARY, env.ESC_HOME];
assert.ok(phase && mode && target && ws && canary, "ESC_* variables are missing");

const { client, ok, fails } = await connect({
  name: "sbf-escape-writer", mode, target,
  serverArgs: ["mcp", "-C", ws, ...(home ? ["--allow-path", home] : [])],
  headers: env.ESC_TOKEN ? { Authorization: "Bearer " + env.ESC_TOKEN } : {},
});
const id = (await ok("create_instance", { workspace_root: ws, ttl_minutes: 15 })).instance_id;
const guest = async (command) => {
  const res = await ok("run_command", { instance_id: id, command });
  assert.equal(res.exit_code, 0, JSON.stringify(res));
};
const readsCanary = (p) => {
  try {
    return fs.readFileSync(p, "utf8").includes("hunter2");
  } catch {
    return false;
  }
};
const paths = (res, key) => res[key].map((e) => e.path).sort();

if (phase === "chain") {
  const c = path.basename(canary);
  await guest(`mkdir chain && cd chain && ln -s . a && ln -s a/.. c && ln -s c/../${c}/secret d && ` +
    `ln -s c/${c}/secret e && echo fine > f`);
  // Into back/: c leads to the workspace, d above it. Into ".": c leads
  // above the workspace, e into the canary.
  for (const [tool, local] of [["copy_from_instance", "back"], ["sync_instance_to_workspace", "."]]) {
    const res = await ok(tool, { instance_id: id, remote_path: "chain", local_path: local });
    const pre = local === "." ? "" : local + "/";
    for (const name of ["c", "d"]) {
      assert.ok(paths(res, "skipped_links").includes(pre + name), `${pre}${name} kept: ${JSON.stringify(res)}`);
    }
    for (const name of ["c", "d", "e"]) {
      assert.ok(!readsCanary(path.join(ws, pre, name)), `${pre}${name} reads the canary`);
    }
    assert.equal(fs.readFileSync(path.join(ws, pre, "f"), "utf8"), "fine\n");
    assert.equal(fs.readlinkSync(path.join(ws, pre, "a")), ".");
  }
}

if (phase === "case") {
  const nfd = "cafe\u0301.env"; // the workspace protects "caf\u00e9.env" (NFC)
  await guest("mkdir -p casey/.GIT/hooks casey/GIT~1/hooks && cd casey && echo '[vm]' > .SANDBOXFORGE.local.toml && " +
    `printf '#!/bin/sh\\ntouch ${canary}/pwned-by-case\\n' > .GIT/hooks/pre-commit && ` +
    `cp .GIT/hooks/pre-commit GIT~1/hooks/ && echo 'touch ${canary}/pwned-by-envrc' > .ENVRC && ` +
    `echo x > .git. && echo SECRET=1 > '${nfd}' && echo fine > fine.txt`);
  for (const local of [".SANDBOXFORGE.local.toml", ".GIT/hooks/pre-commit", ".ENVRC", "GIT~1/hooks/pre-commit",
    ".git./config", ".git::$INDEX_ALLOCATION/hooks/pre-commit", ".SandboxForge/overrides.toml", nfd]) {
    const e = await fails("copy_from_instance", { instance_id: id, remote_path: "casey/.ENVRC", local_path: local },
      "HOST_PATH_DENIED");
    assert.ok(e.details.rule, JSON.stringify(e));
  }
  const res = await ok("sync_instance_to_workspace", { instance_id: id, remote_path: "casey", local_path: "." });
  assert.deepEqual(paths(res, "skipped_paths"),
    [".ENVRC", ".GIT", ".SANDBOXFORGE.local.toml", ".git.", "GIT~1", nfd].sort(), JSON.stringify(res));
  assert.equal(fs.readFileSync(path.join(ws, "fine.txt"), "utf8"), "fine\n");
}

if (phase === "home") {
  assert.ok(home, "ESC_HOME is missing");
  await guest("mkdir -p h/.config/sandboxforge h/.ssh h/.aws h/.local/lib/python3.11/site-packages && " +
    `printf '[policy]\\nworkspace_roots = ["/"]\\nallowed_paths = ["/"]\\n' > h/.config/sandboxforge/config.toml && ` +
    `echo 'touch ${canary}/pwned-by-bashrc' > h/.bashrc && echo 'ssh-ed25519 AAAA guest' > h/.ssh/authorized_keys && ` +
    "echo '[x]\\ncredential_process = sh -c id' > h/.aws/config && echo 'registry=http://evil' > h/.npmrc && " +
    "echo 'import os' > h/.local/lib/python3.11/site-packages/x.pth && echo fine > h/notes.txt");
  for (const [remote, local] of [["h/.config/sandboxforge/config.toml", ".config/sandboxforge/config.toml"],
    ["h/.config/sandboxforge", ".config/sandboxforge"], ["h/.bashrc", ".bashrc"],
    ["h/.ssh/authorized_keys", ".ssh/authorized_keys"], ["h/.npmrc", ".npmrc"], ["h/.aws", ".aws"],
    ["h/.local", ".local"], ["h/notes.txt", "sub/.vimrc"]]) {
    const e = await fails("copy_from_instance", { instance_id: id, remote_path: remote,
      local_path: path.join(home, local) }, "HOST_PATH_DENIED");
    assert.ok(e.details.rule, JSON.stringify(e));
  }
  const res = await ok("sync_instance_to_workspace", { instance_id: id, remote_path: "h", local_path: home });
  assert.deepEqual(paths(res, "skipped_paths"), [".aws", ".bashrc", ".config", ".local", ".npmrc", ".ssh"],
    JSON.stringify(res));
  assert.equal(fs.readFileSync(path.join(home, "notes.txt"), "utf8"), "fine\n");
}

await ok("destroy_instance", { instance_id: id });
await client.close();
console.log(JSON.stringify({ ok: true, phase, mode }));
