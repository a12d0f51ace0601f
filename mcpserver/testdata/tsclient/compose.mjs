// The escape suite's compose attacks over MCP (escape/compose_test.go runs
// this), made with the official TypeScript SDK over stdio:
//   ESC_TARGET=SBF_BINARY ESC_WS=<the server's workspace> ESC_INSTANCE=<its instance>
//   ESC_WANT=<the positioned key every refusal must name> node compose.mjs
// The workspace's compose files name a host file; every tool that loads
// them (validate_workspace_config, plan, apply, and prepare_workspace on
// the workspace's instance) must refuse with WORKSPACE_CONFIG_INVALID
// naming the key. It prints the refusals as JSON, so the suite can compare
// them between a host file that exists and one that does not.
import assert from "node:assert/strict";
import { connect } from "./sdk.mjs";

const env = process.env;
const [target, ws, instance, want] = [env.ESC_TARGET, env.ESC_WS, env.ESC_INSTANCE, env.ESC_WANT];
assert.ok(target && ws && instance && want, "ESC_* variables are missing");

const { client, fails } = await connect({ name: "sbf-escape-compose", mode: "stdio", target,
  serverArgs: ["mcp", "-C", ws] });

const refusals = {};
for (const [tool, args] of [["validate_workspace_config", { workspace_root: ws }], ["plan", { workspace_root: ws }],
  ["apply", { workspace_root: ws }], ["prepare_workspace", { instance_id: instance }]]) {
  const e = await fails(tool, args, "WORKSPACE_CONFIG_INVALID");
  assert.ok(e.message.includes(want), `${tool}: ${JSON.stringify(e)}`);
  refusals[tool] = e;
}
await client.close();
console.log(JSON.stringify({ ok: true, refusals }));
