// Command sbf converges VM-isolated workspaces described by a committed
// .sandboxforge.toml (package cli). It links neither the MCP server nor
// compose-go, so every command starts fast; `sbf mcp`, `sbf serve` and the
// loading of compose files run in sbf-server, installed beside it.
package main

import (
	"os"

	"github.com/sandboxforge/sbf/cli"
)

func main() { os.Exit(cli.Main(nil)) }
