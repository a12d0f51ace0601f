// Command sbf-server is sbf's command line with the MCP server (sbf mcp,
// sbf serve) and compose loading linked in: sbf hands those to it.
package main

import (
	"os"

	"github.com/sandboxforge/sbf/cli"
	"github.com/sandboxforge/sbf/cli/mcpcmd"
	"github.com/sandboxforge/sbf/drivers/guest/composefile"
)

func main() {
	os.Exit(cli.Main(&cli.Server{Commands: mcpcmd.Commands, Compose: composefile.LoadProject}))
}
