package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Prompts (issue 31): the common workflows as ready-made instructions an
// agent's user can pick, each naming the tools and arguments in the
// order that works, so an agent does not learn them by failing. Their
// arguments complete (completions.go).

type promptSpec struct {
	name, title, description string
	args                     []promptArg
	text                     func(args map[string]string) string
}

type promptArg struct {
	name, description string
	required          bool
}

var prompts = []promptSpec{
	{
		name: "start_sandbox", title: "Start a sandbox for this repo",
		description: "Lease a VM sandbox for a workspace, copy the repo in and prepare what it declares.",
		args: []promptArg{{name: "workspace_root", description: "Absolute path of the repo (a workspace this " +
			"server serves; completes)."}},
		text: func(a map[string]string) string {
			root := a["workspace_root"]
			if root == "" {
				root = "the repository's absolute path"
			}
			return "Start a sandbox for " + root + " with sbf:\n" +
				"1. create_instance {workspace_root: " + quoteArg(root) + "} (an absolute path); keep its " +
				"instance_id. It prepares what the repo declares (services, compose) unless auto_bootstrap is " +
				"false; a cold VM can take minutes.\n" +
				"2. sync_workspace_to_instance {instance_id, local_path: " + quoteArg(root) +
				", remote_path: \"/work\"} to copy the repo in.\n" +
				"3. Report the instance_id, its expires_at, and that extend_instance_ttl keeps it longer."
		},
	},
	{
		name: "run_tests", title: "Run the tests in a sandbox",
		description: "Run the repo's tests inside a sandbox and summarise the failures.",
		args: []promptArg{
			{name: "instance_id", description: "The sandbox (completes).", required: true},
			{name: "command", description: "The test command; default: the one the repo documents."},
		},
		text: func(a map[string]string) string {
			cmd := a["command"]
			if cmd == "" {
				cmd = "the test command the repository documents (README, Makefile, CI config)"
			}
			return "Run the tests in sandbox " + a["instance_id"] + ":\n" +
				"1. run_command {instance_id: " + quoteArg(a["instance_id"]) + ", command: " + quoteArg(cmd) +
				", workdir: \"/work\", timeout_seconds: 1800}. For runs longer than that use " +
				"start_background_task, then get_task_status and get_task_logs.\n" +
				"2. If stdout_truncated or stderr_truncated is true, rerun the failing tests alone.\n" +
				"3. Summarise: exit_code, how many tests failed, and each failure's first lines."
		},
	},
	{
		name: "bring_results_back", title: "Bring the results back",
		description: "Copy a sandbox's results (reports, build output, changed files) back into the workspace.",
		args: []promptArg{
			{name: "instance_id", description: "The sandbox (completes).", required: true},
			{name: "remote_paths", description: "Guest files or folders, comma-separated; default: what the " +
				"last run wrote."},
			{name: "local_dest", description: "Host folder inside the workspace; default: artifacts."},
		},
		text: func(a map[string]string) string {
			dest := a["local_dest"]
			if dest == "" {
				dest = "artifacts"
			}
			paths := "the reports and build output the last run wrote"
			if a["remote_paths"] != "" {
				paths = strings.Join(strings.Split(a["remote_paths"], ","), ", ")
			}
			return "Bring results back from sandbox " + a["instance_id"] + ":\n" +
				"1. collect_artifacts {instance_id: " + quoteArg(a["instance_id"]) + ", remote_paths: [" + paths +
				"], local_dest: " + quoteArg(dest) + "}.\n" +
				"2. For source files changed in the guest, sync_instance_to_workspace {instance_id, remote_path: " +
				"\"/work\", local_path: the workspace root} — it overwrites host files, so say which first.\n" +
				"3. destroy_instance {instance_id} when the sandbox is no longer needed; its lease ends anyway."
		},
	},
	{
		name: "retry_from_snapshot", title: "Retry from a snapshot",
		description: "Bring a sandbox back to one of its snapshots and run a command again.",
		args: []promptArg{
			{name: "instance_id", description: "The sandbox (completes).", required: true},
			{name: "snapshot", description: "One of its snapshots (completes once instance_id is given).",
				required: true},
			{name: "command", description: "What to run afterwards."},
		},
		text: func(a map[string]string) string {
			out := "1. restore_snapshot {instance_id: " + quoteArg(a["instance_id"]) + ", name: " +
				quoteArg(a["snapshot"]) + "} (what was written since is lost).\n"
			if a["command"] != "" {
				out += "2. run_command {instance_id: " + quoteArg(a["instance_id"]) + ", command: " +
					quoteArg(a["command"]) + "} and report its exit_code and output.\n"
			}
			return out
		},
	},
}

func quoteArg(v string) string { return fmt.Sprintf("%q", v) }

func (s *Server) registerPrompts() {
	for _, p := range prompts {
		opts := []mcp.PromptOption{mcp.WithPromptTitle(p.title), mcp.WithPromptDescription(p.description)}
		for _, a := range p.args {
			aopts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.description)}
			if a.required {
				aopts = append(aopts, mcp.RequiredArgument())
			}
			opts = append(opts, mcp.WithArgument(a.name, aopts...))
		}
		s.mcp.AddPrompt(mcp.NewPrompt(p.name, opts...), func(_ context.Context, req mcp.GetPromptRequest) (
			*mcp.GetPromptResult, error) {
			for _, a := range p.args {
				if a.required && strings.TrimSpace(req.Params.Arguments[a.name]) == "" {
					return nil, fmt.Errorf("prompt %s: argument %s is required", p.name, a.name)
				}
			}
			return mcp.NewGetPromptResult(p.description, []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(p.text(req.Params.Arguments))),
			}), nil
		})
	}
}
