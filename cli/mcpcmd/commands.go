// Package mcpcmd is the MCP server's part of the command line (sbf mcp,
// sbf serve), linked only into the sbf-server binary: the MCP server and
// its JSON Schema validation cost every process that links them a start.
package mcpcmd

import (
	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/cli"
)

// cmds are the server's commands over the command line's shared state.
type cmds struct{ *cli.App }

// Commands are sbf-server's mcp and serve.
func Commands(a *cli.App) []*cobra.Command {
	c := cmds{a}
	return []*cobra.Command{c.mcpCommand(), c.withLoopOnly(c.serveCommand())}
}
