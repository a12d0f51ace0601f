// The escape suite's ceiling attacks (issue 29, attacks 8 and 9), made with
// the official TypeScript SDK against a server whose operator allowed one
// instance and 1h leases (the global config's [lease] or [policy]),
// serving a workspace that says 500 and 2000h:
//   CEIL_PHASE=limits|output CEIL_MODE=stdio|http CEIL_TARGET=SBF_BINARY|URL
//   CEIL_WS=<workspace> [CEIL_TOKEN=<bearer token>] node ceilings.mjs
// limits: attack 8, the instance cap and lease lengths, and the policy
//         resource showing them.
// output: attack 9, run_command's max_output_bytes against the server's
//         output ceiling.
// Any failed expectation throws, and node exits non-zero.
import assert from "node:assert/strict";
import { connect } from "./sdk.mjs";

const env = process.env;
const [phase, mode, target, ws] = [env.CEIL_PHASE, env.CEIL_MODE, env.CEIL_TARGET, env.CEIL_WS];
assert.ok(phase && mode && target && ws, "CEIL_* variables are missing");
// The SDK's client with its default limits: the server fits one result in
// its response budget (4 MiB of JSON, sent twice) whatever the streams hold.
const { client, ok, fails } = await connect({
  name: "sbf-escape-ceilings", mode, target, serverArgs: ["mcp", "-C", ws],
  headers: env.CEIL_TOKEN ? { Authorization: "Bearer " + env.CEIL_TOKEN } : {},
});

if (phase === "limits") {
  // Attack 8: the workspace's 2000h and 500 are not the operator's 1h and
  // 1, and a tool's overrides cannot raise them either.
  const long = await fails("create_instance", { workspace_root: ws, ttl_minutes: 120 }, "TTL_INVALID");
  assert.equal(long.details.max_ttl_minutes, 60, JSON.stringify(long));
  const id = (await ok("create_instance", { workspace_root: ws, ttl_minutes: 30 })).instance_id;
  await fails("create_instance", { workspace_root: ws }, "INSTANCE_LIMIT_EXCEEDED");
  await fails("create_instance", { workspace_root: ws, overrides: { lease: { max_instances: 500 } } },
    "INSTANCE_LIMIT_EXCEEDED");
  await fails("extend_instance_ttl", { instance_id: id, ttl_minutes: 120 }, "TTL_INVALID");

  // The policy resource shows the ceilings and where they came from.
  const { resources } = await client.listResources();
  const uri = resources.map((r) => r.uri).find((u) => u.endsWith("/policy"));
  const policy = JSON.parse((await client.readResource({ uri })).contents[0].text);
  const row = (key) => policy.ceilings?.find((c) => c.key === key);
  assert.equal(row("max_instances")?.value, 1, JSON.stringify(policy.ceilings));
  assert.match(row("max_ttl").source, /\[(policy|lease)\] max_ttl$/);
  assert.equal(row("max_output_bytes").value, 8 << 20);
  await ok("destroy_instance", { instance_id: id });
}

if (phase === "output") {
  // Attack 9: a caller asks to keep 2 GB; the guest prints 24 MiB on each
  // stream. The server keeps its ceiling, 8 MiB per stream, and says so.
  const ceiling = 8 << 20;
  const id = (await ok("create_instance", { workspace_root: ws, ttl_minutes: 30 })).instance_id;
  const run = await ok("run_command", { instance_id: id, max_output_bytes: 2000000000,
    command: "head -c 25165824 /dev/zero | tr '\\0' o; head -c 25165824 /dev/zero | tr '\\0' e >&2" });
  assert.ok(run.stdout.length <= ceiling && run.stderr.length <= ceiling,
    `kept ${run.stdout.length} + ${run.stderr.length} bytes`);
  assert.equal(run.max_output_bytes, ceiling);
  assert.equal(run.stdout_truncated, true);
  assert.equal(run.stdout_bytes, 25165824);
  assert.equal(run.response_truncated, true);
  await ok("destroy_instance", { instance_id: id });
}

await client.close();
console.log(JSON.stringify({ ok: true, phase, mode }));
