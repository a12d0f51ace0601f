// Command sbf converges VM-isolated workspaces described by a committed
// .sandboxforge.toml (package cli). It links neither the MCP server nor
// compose-go, so every command starts fast; `sbf mcp`, `sbf serve` and the
// loading of compose files run in sbf-server, installed beside it.
package main

import (
	"os"

	// v1's lease database, read by import-v1 (v1import/leases opens it by
	// driver name). Only sbf links SQLite: sbf-server hands import-v1 to
	// sbf, which keeps the server's binary 5 MB smaller.
	_ "modernc.org/sqlite"

	"github.com/sandboxforge/sbf/cli"
)

func main() { os.Exit(cli.Main(nil)) }
