package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

const canary = "Sup3rS3cretCanary"

// canarySpec plants the canary in every secret-bearing key: the MySQL root
// password, extra_env values whose names look secret, and credentials in
// a connection URL.
const canarySpec = simSpec + `
[infra.mysql]
root_password = "` + canary + `-root"
extra_env = { MYSQL_PASSWORD = "` + canary + `-pw", DATABASE_URL = "mysql://app:` + canary +
	`-url@db:3306/app", TZ = "UTC" }
[infra.redis]
extra_env = { REDIS_PASSWORD = "` + canary + `-redis", API_TOKEN = "` + canary + `-token" }
[sandboxes.api]
`

// Every tool's every answer — results, errors, text and structured
// content — is free of the planted secrets.
func TestNoToolOutputCarriesASecret(t *testing.T) {
	f := newFixture(t, canarySpec)
	called := map[string]bool{}
	check := func(name string, args map[string]any) map[string]any {
		t.Helper()
		called[name] = true
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := f.c.CallTool(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, _ := json.Marshal(res)
		if strings.Contains(string(raw), canary) {
			t.Errorf("%s(%v) shows a secret: %s", name, args, raw)
		}
		var out map[string]any
		json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &out)
		return out
	}
	overrides := map[string]any{"infra": map[string]any{"mysql": map[string]any{"root_password": canary + "-override",
		"extra_env": map[string]any{"DB_PASS": canary + "-extra"}}}}
	check("validate_workspace_config", map[string]any{"workspace_root": f.root})
	check("validate_workspace_config", map[string]any{"workspace_root": f.root, "overrides": overrides})
	check("get_desired_state", map[string]any{"workspace_root": f.root})
	check("plan", map[string]any{"workspace_root": f.root})
	check("apply", map[string]any{"workspace_root": f.root})
	id, _ := check("create_instance", map[string]any{"workspace_root": f.root,
		"ttl_minutes": 10})["instance_id"].(string)
	check("list_instances", map[string]any{"include_expired": true})
	check("prepare_workspace", map[string]any{"instance_id": id})
	check("extend_instance_ttl", map[string]any{"instance_id": id, "ttl_minutes": 5})
	// The data plane: a command that prints the environment sbf gives it,
	// copies, sync and artifacts of a folder holding files of the workspace.
	check("run_command", map[string]any{"instance_id": id, "command": "env; echo done"})
	check("run_ephemeral", map[string]any{"workspace_root": f.root, "command": "env; echo done"})
	os.MkdirAll(filepath.Join(f.root, "src"), 0o755)
	os.WriteFile(filepath.Join(f.root, "src", "a.txt"), []byte("a"), 0o644)
	check("copy_to_instance", map[string]any{"instance_id": id, "local_path": "src", "remote_path": "/w/src"})
	check("copy_from_instance", map[string]any{"instance_id": id, "remote_path": "/w/src", "local_path": "back"})
	check("sync_workspace_to_instance", map[string]any{"instance_id": id, "local_path": "src", "remote_path": "/w/s"})
	check("sync_instance_to_workspace", map[string]any{"instance_id": id, "remote_path": "/w/s", "local_path": "back2"})
	check("collect_artifacts", map[string]any{"instance_id": id, "remote_paths": []any{"/w/src/a.txt"},
		"local_dest": "arts"})
	task, _ := check("start_background_task", map[string]any{"instance_id": id,
		"command": "env; sleep 30"})["task_id"].(string)
	check("get_task_status", map[string]any{"task_id": task})
	check("get_task_logs", map[string]any{"task_id": task})
	check("stop_task", map[string]any{"task_id": task, "force": true})
	// v1's Docker tools, over a docker that prints the environment it is
	// given: compose gets the services' connection variables, secrets
	// included, and must not show them, succeeding or failing.
	docker := newFakeDocker(t)
	docker.EchoEnv = true
	docker.set(dockerRule{pattern: "compose\\ down*", echoEnv: true, code: 1})
	check("docker_run", map[string]any{"instance_id": id, "image": "img", "env": map[string]any{"X": "1"}})
	check("docker_exec", map[string]any{"instance_id": id, "container": "web", "command": "env"})
	check("docker_logs", map[string]any{"instance_id": id, "container": "web"})
	if out := check("docker_compose", map[string]any{"instance_id": id, "project_dir": ".",
		"action": "up"}); !strings.Contains(mustJSON(out), "DB_PASSWORD=[redacted]") {
		t.Errorf("docker_compose did not get the connection variables, so the canary proves nothing: %v", out)
	}
	check("docker_compose", map[string]any{"instance_id": id, "project_dir": ".", "action": "exec",
		"services": []any{"web"}, "command": "env"})
	check("docker_compose", map[string]any{"instance_id": id, "project_dir": ".", "action": "down"})
	check("docker_ps", map[string]any{"instance_id": id})
	check("docker_images", map[string]any{"instance_id": id})
	check("docker_cleanup", map[string]any{"instance_id": id})
	check("docker_build", map[string]any{"instance_id": id, "context_path": ".", "image_tag": "app:dev"})
	check("validate_image", map[string]any{"instance_id": id, "image_name": "app:dev"})
	agentCanaryCalls(check, id)   // agenttools_test.go
	sessionCanaryCalls(check, id) // execsessions_test.go
	check("enable_toolset", map[string]any{"toolset": "files"})
	check("destroy_instance", map[string]any{"instance_id": id})

	// Errors about secret-bearing keys name the key, never the value.
	bad := map[string]any{"infra": map[string]any{"mysql": map[string]any{"root_password": 987654321,
		"extra_env": map[string]any{"MYSQL_PASSWORD": []any{canary}}}}}
	out := check("validate_workspace_config", map[string]any{"workspace_root": f.root, "overrides": bad})
	if out["error_code"] != "WORKSPACE_CONFIG_INVALID" || strings.Contains(mustJSON(out), "987654321") {
		t.Errorf("invalid secrets: %v", out)
	}

	tools, err := f.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if !called[tool.Name] {
			t.Errorf("tool %s is not covered by the canary test", tool.Name)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
