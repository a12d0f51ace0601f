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

// readOnly is the hints of a tool that only reads.
var readOnly = hints{readOnly: true, idempotent: true}

// toolHints holds every tool's hints, v1's Docker tools included (named
// as v1 named them) so they are truthful from the day they are added.
var toolHints = map[string]hints{
	// Lifecycle.
	"create_instance": {
		openWorld: true,
	}, // a new VM each call; downloads its image, installs Docker
	"list_instances":      readOnly,                              // observes; an expired lease is left for the loop
	"destroy_instance":    {destructive: true, idempotent: true}, // deletes the VM; destroying it again is a no-op
	"extend_instance_ttl": {},                                    // moves the lease end later, by more on every call
	// run_ephemeral runs arbitrary code in a VM it makes and deletes.
	"run_ephemeral": {destructive: true, openWorld: true},
	// Declarative.
	"validate_workspace_config": readOnly,
	"plan":                      readOnly,
	"get_desired_state":         readOnly,
	"apply": {
		destructive: true,
		idempotent:  true,
		openWorld:   true,
	}, // deletes undeclared and expired sandboxes
	"prepare_workspace": {
		destructive: true,
		idempotent:  true,
		openWorld:   true,
	}, // recreates containers, rewrites env keys in workspace files
	// Data plane.
	"run_command":                {destructive: true, openWorld: true},
	"copy_to_instance":           {destructive: true, idempotent: true}, // overwrites guest files
	"copy_from_instance":         {destructive: true, idempotent: true}, // overwrites host files
	"sync_workspace_to_instance": {destructive: true, idempotent: true}, // deletes guest files the host folder lacks
	"sync_instance_to_workspace": {destructive: true, idempotent: true}, // overwrites host files
	"collect_artifacts": {
		destructive: true,
	}, // a name taken twice over is overwritten (v1's i-NAME)
	// Background tasks.
	"start_background_task": {destructive: true, openWorld: true},
	"get_task_status":       readOnly,
	"get_task_logs":         readOnly,
	"stop_task":             {destructive: true, idempotent: true}, // signals the task's process group
	// v1's Docker tools.
	"validate_image": readOnly,
	"docker_ps":      readOnly,
	"docker_images":  readOnly,
	"docker_logs":    readOnly,
	"docker_build":   {openWorld: true},                     // adds an image (a tag moves to it); pulls bases
	"docker_run":     {destructive: true, openWorld: true},  // an arbitrary command with workspace volumes
	"docker_exec":    {destructive: true, openWorld: true},  // an arbitrary command
	"docker_compose": {destructive: true, openWorld: true},  // down removes containers; up pulls
	"docker_cleanup": {destructive: true, idempotent: true}, // prunes
	// It changes only what this session's tools/list holds.
	"enable_toolset": {idempotent: true},
}

// unknownHints are the protocol's defaults, for a tool missing from
// toolHints: assume the worst. (A test fails for every such tool.)
var unknownHints = hints{destructive: true, openWorld: true}

// annotations are a tool's hints as MCP annotations. destructiveHint and
// openWorldHint are always said: the protocol's default for both is true,
// and a client that read a missing one as false would think a tool safer
// than it is. readOnlyHint and idempotentHint are said only when true:
// missing, they are false by the protocol and by any reading, and every
// turn of a conversation carries the list.
func annotations(name string) mcp.ToolAnnotation {
	h, ok := toolHints[name]
	if !ok {
		h = unknownHints
	}
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
