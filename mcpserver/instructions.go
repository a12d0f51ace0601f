package mcpserver

import (
	"strings"
)

// instructions is the initialize result's text: what sbf is, the
// workspaces it serves (create_instance needs one as an absolute
// workspace_root, and an agent cannot guess the server's folder), and the
// first calls to make.
func instructions(cfg Config) string {
	var b strings.Builder
	b.WriteString("sbf runs VM-isolated sandboxes for a workspace (a folder with .sandboxforge.toml, or any " +
		"folder: defaults apply). Every tool edits the desired state and the engine converges it; leases " +
		"expire on their own.\n")
	var served []string
	if cfg.DefaultRoot != "" {
		served = append(served, cfg.DefaultRoot)
	}
	for _, r := range cfg.Policy.WorkspaceRoots {
		if r != cfg.DefaultRoot {
			served = append(served, r)
		}
	}
	switch {
	case len(served) == 0:
		b.WriteString("Served workspaces: any absolute folder.\n")
	case len(cfg.Policy.WorkspaceRoots) == 0:
		b.WriteString("Default workspace: " + served[0] + " (other absolute folders are served too).\n")
	default:
		b.WriteString("Served workspaces: " + strings.Join(served, ", ") + " (and folders below them; a client's " +
			"MCP roots narrow them).\n")
	}
	first := "the workspace's absolute path"
	if len(served) > 0 {
		first = served[0]
	}
	b.WriteString("First calls: create_instance {workspace_root: \"" + first + "\"} (an absolute path; returns " +
		"instance_id, the inst_ id every instance tool takes), then run_command {instance_id, command}; " +
		"list_instances shows what exists; extend_instance_ttl keeps a sandbox past its lease; destroy_instance " +
		"ends it. plan/apply converge the sandboxes .sandboxforge.toml declares. Prompts start_sandbox, " +
		"run_tests and bring_results_back walk through the usual workflow; logging/setLevel info tells each " +
		"step and lease of your workspaces, warning only expiring leases.\n")
	b.WriteString("A result's warnings list what sbf corrected or left out (an unknown argument); the call " +
		"succeeded. tools/list holds some toolsets; enable_toolset lists the others (files, sessions, " +
		"snapshots, ports and stats…) and adds one to this session's list.")
	return b.String()
}
