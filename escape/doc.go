// Package escape is sbf's escape suite: every way an MCP client (an LLM
// following whatever text it last read) or a guest (running whatever the
// agent put there) was found to reach the host, as a test against the real
// sbf binary, over the CLI and over MCP with the official TypeScript SDK
// (stdio and Streamable HTTP). Each test asserts that a canary folder
// outside the workspace is untouched and that no host command ran.
// SECURITY.md names the rule each test proves.
package escape
