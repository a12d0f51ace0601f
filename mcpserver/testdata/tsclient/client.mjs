// Drives sbf's MCP server with the official TypeScript SDK:
//   node client.mjs stdio SBF_BINARY WORKSPACE   (spawns `sbf mcp -C WORKSPACE`)
//   node client.mjs http URL WORKSPACE           (connects to a running `sbf serve`)
// It lists tools (the default toolsets: every v1 tool, each with a title),
// lists the workspace toolset with enable_toolset and hears the list
// change, runs create → list → extend → destroy on the workspace (a
// sim-driver workspace in tests) and two error cases, and prints a JSON
// summary. Any failed expectation exits non-zero.
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect } from "./sdk.mjs";

const [mode, target, workspace] = process.argv.slice(2);

function check(cond, what, detail) {
  if (!cond) {
    console.error(`FAILED: ${what}: ${JSON.stringify(detail)}`);
    process.exit(1);
  }
}

let listChanges = 0;
const { client, call } = await connect({ name: "sbf-ts-sdk-test", mode, target,
  serverArgs: ["mcp", "-C", workspace],
  setup: (c) => c.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanges++; }) });

const listing = (await client.listTools()).tools;
const tools = listing.map((t) => t.name);
for (const name of ["create_instance", "list_instances", "destroy_instance", "extend_instance_ttl",
  "validate_workspace_config", "prepare_workspace", "run_command", "copy_to_instance", "copy_from_instance",
  "sync_workspace_to_instance", "sync_instance_to_workspace", "collect_artifacts", "start_background_task",
  "get_task_status", "get_task_logs", "stop_task", "docker_build", "docker_run", "docker_exec", "docker_logs",
  "docker_compose", "docker_ps", "docker_images", "docker_cleanup", "validate_image", "enable_toolset"]) {
  check(tools.includes(name), `tool ${name} listed`, tools);
}
check(listing.every((t) => t.title && t.description.includes("Returns ")), "every tool's title and return",
  listing.filter((t) => !t.title));

const enabled = await call("enable_toolset", { toolset: "workspace" });
check(!enabled.isError && enabled.body.toolsets.find((g) => g.name === "workspace")?.listed === true,
  "enable_toolset workspace", enabled);
for (let i = 0; i < 100 && listChanges === 0; i++) await new Promise((r) => setTimeout(r, 20));
check(listChanges > 0, "notifications/tools/list_changed", listChanges);
const more = (await client.listTools()).tools.map((t) => t.name);
for (const name of ["plan", "apply", "get_desired_state"]) {
  check(more.includes(name), `tool ${name} listed after enable_toolset`, more);
}

const created = await call("create_instance", { workspace_root: workspace, ttl_minutes: 15 });
check(!created.isError && created.body.status === "running", "create_instance", created);
const id = created.body.instance_id;
check(/^inst_[0-9a-f]{8}$/.test(id), "instance id shape", id);
check(created.structured?.instance_id === id, "structured content mirrors the text", created.structured);

const listed = await call("list_instances", {});
const row = listed.body.instances.find((i) => i.instance_id === id);
check(row && row.status === "running" && row.live_exists === true, "list_instances shows the instance", listed.body);

const extended = await call("extend_instance_ttl", { instance_id: id, ttl_minutes: 10 });
check(!extended.isError && extended.body.ttl_extended_minutes === 10, "extend_instance_ttl", extended);

const bad = await call("extend_instance_ttl", { instance_id: id, ttl_minutes: 0 });
check(bad.isError && bad.body.error_code === "TTL_INVALID" && bad.body.details, "TTL_INVALID error", bad);

const missing = await call("destroy_instance", { instance_id: "inst_00000000" });
check(missing.isError && missing.body.error_code === "INSTANCE_NOT_FOUND" &&
  missing.body.details.next_steps.some((step) => step.includes("list_instances")), "INSTANCE_NOT_FOUND error", missing);

const destroyed = await call("destroy_instance", { instance_id: id });
check(!destroyed.isError && destroyed.body.status === "destroyed", "destroy_instance", destroyed);

const after = await call("list_instances", {});
check(!after.body.instances.some((i) => i.instance_id === id), "destroyed instance no longer listed", after.body);

await client.close();
console.log(JSON.stringify({ ok: true, mode, tools: tools.length, listed: more.length, instance: id }));
