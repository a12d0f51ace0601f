// Command sbf-server is sbf's command line with the MCP server (sbf mcp,
// sbf serve) and compose loading linked in: sbf hands those to it. Compose
// files load in a child, `sbf-server compose-load`, which confines itself
// before it reads them; sbf-server runs that child too, never loading them
// in its own process.
package main

import (
	"context"
	"os"

	"github.com/sandboxforge/sbf/cli"
	"github.com/sandboxforge/sbf/cli/mcpcmd"
	"github.com/sandboxforge/sbf/drivers/guest/composefile"
	"github.com/sandboxforge/sbf/drivers/guest/composerun"
)

func main() {
	// The loader child starts here, before anything else reads a file.
	if len(os.Args) == 2 && os.Args[1] == composerun.Command {
		os.Exit(composefile.Child(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(cli.Main(&cli.Server{Commands: mcpcmd.Commands}))
}
