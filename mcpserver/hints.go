package mcpserver

import "github.com/mark3labs/mcp-go/mcp"

// hints are a tool's MCP annotations. v1 set none (FastMCP's @app.tool()
// without annotations), so clients assumed the protocol's defaults for
// every tool: not read-only, destructive, not idempotent, open world;
// sbf says per tool what its handler does.
//
//   - readOnly: the call changes nothing outside sbf's own records (a
//     task's observed exit is written down; that is bookkeeping).
//   - destructive: it may delete or overwrite something that existed (a
//     VM, guest or host files, processes, containers), or run arbitrary
//     commands that may; false means it only adds.
//   - idempotent: calling it again with the same arguments changes
//     nothing more.
//   - openWorld: it reaches beyond this host's sbf instances: it downloads
//     images or packages, or runs arbitrary code in a guest that has the
//     network.
type hints struct {
	readOnly, destructive, idempotent, openWorld bool
}

// The hints most tools have, by what they do.
var (
	readOnly  = hints{readOnly: true, idempotent: true}                     // only reads
	adds      = hints{}                                                     // adds something new each call
	replaces  = hints{destructive: true, idempotent: true}                  // deletes or overwrites, the same again
	runsCode  = hints{destructive: true, openWorld: true}                   // runs an arbitrary command
	makesVM   = hints{openWorld: true}                                      // makes a VM (or image): downloads
	converges = hints{destructive: true, idempotent: true, openWorld: true} // converges desired state
)

// annotations are a tool's hints as MCP annotations. destructiveHint and
// openWorldHint are always said: the protocol's default for both is true,
// and a client that read a missing one as false would think a tool safer
// than it is. readOnlyHint and idempotentHint are said only when true:
// missing, they are false by the protocol and by any reading, and every
// turn of a conversation carries the list.
func annotations(h hints) mcp.ToolAnnotation {
	onlyTrue := func(b bool) *bool {
		if !b {
			return nil
		}
		return mcp.ToBoolPtr(true)
	}
	return mcp.ToolAnnotation{
		ReadOnlyHint:    onlyTrue(h.readOnly),
		DestructiveHint: mcp.ToBoolPtr(h.destructive),
		IdempotentHint:  onlyTrue(h.idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(h.openWorld),
	}
}
