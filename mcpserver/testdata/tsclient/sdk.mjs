// What every client script here shares: the official SDK's client,
// connected over stdio (it spawns `SBF_BINARY ...serverArgs`) or over
// streamable HTTP (to a running `sbf serve` at URL), and tool calls whose
// result text is JSON. A failed expectation throws.
import assert from "node:assert/strict";
import fs from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// bearer is the Authorization header every HTTP request to sbf carries:
// the token in the file SBF_TOKEN_FILE names (sbf serve prints where its
// token is), or none.
export function bearer() {
  const file = process.env.SBF_TOKEN_FILE;
  return file ? { Authorization: "Bearer " + fs.readFileSync(file, "utf8").trim() } : {};
}

// connect returns the client and its call helpers. setup runs before the
// connection (to register handlers the server may call at once). Over
// HTTP the headers default to bearer(). maxBufferSize, when set, raises
// the stdio transport's limit on one message (the SDK's default is 10 MiB).
export async function connect({ name, mode, target, serverArgs, headers = bearer(), options = {}, setup,
  maxBufferSize }) {
  assert.ok(["stdio", "http"].includes(mode), `mode ${mode}: want stdio or http`);
  const client = new Client({ name, version: "1.0.0" }, options);
  setup?.(client);
  const transport = mode === "stdio"
    ? new StdioClientTransport({ command: target, args: serverArgs, env: process.env, stderr: "inherit", maxBufferSize })
    : new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
  await client.connect(transport);

  async function call(tool, args) {
    const res = await client.callTool({ name: tool, arguments: args });
    return {
      isError: Boolean(res.isError),
      body: JSON.parse(res.content?.[0]?.text ?? "null"),
      structured: res.structuredContent,
    };
  }
  // ok calls a tool that must succeed and returns its result.
  async function ok(tool, args) {
    const res = await call(tool, args);
    assert.equal(res.isError, false, `${tool} ${JSON.stringify(args)} failed: ${JSON.stringify(res.body)}`);
    return res.body;
  }
  // fails calls a tool that must fail with code and returns its error.
  async function fails(tool, args, code) {
    const res = await call(tool, args);
    assert.equal(res.isError, true, `${tool} ${JSON.stringify(args)} should fail: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error_code, code, `${tool} ${JSON.stringify(args)}: ${JSON.stringify(res.body)}`);
    return res.body;
  }
  return { client, transport, call, ok, fails };
}
