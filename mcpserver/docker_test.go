package mcpserver

import (
	"slices"
	"strings"
	"testing"
)

// dockerFixture is an instance on the sim with a fake docker on PATH.
func dockerFixture(t *testing.T, specText string) (*fixture, *fakeDocker, string) {
	d := newFakeDocker(t)
	f := newFixture(t, specText)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	return f, d, id
}

func TestDockerRunExecLogsWithV1Argv(t *testing.T) {
	f, d, id := dockerFixture(t, simSpec)
	d.set(dockerRule{pattern: "run*", stdout: "c0ffee\nwarning\n"})
	out := f.ok("docker_run", map[string]any{"instance_id": id, "image": "img:tag", "command": "pytest -q",
		"name":       "runner",
		"privileged": true, "env": map[string]any{"B": "2", "A": "x y"}, "volumes": []any{"/w:/w"},
		"ports": []any{"8080:80"}, "workdir": "/src"})
	want := "run -d --name runner --privileged -w /src -e A=x y -e B=2 -v /w:/w -p 8080:80 -- img:tag sh -lc pytest -q"
	if d.last() != want || out["container"] != "c0ffee" ||
		out["command"] != "docker run -d --name runner --privileged -w /src -e 'A=x y' -e B=2 -v /w:/w -p 8080:80 -- "+
			"img:tag sh -lc 'pytest -q'" {
		t.Errorf("docker_run: %s\n%v", d.last(), out)
	}
	hasKeys(t, "docker_run", out, "instance_id", "command", "container", "exit_code", "stdout", "stderr", "duration_ms")
	f.ok("docker_run", map[string]any{"instance_id": id, "image": "img", "detach": false})
	if d.last() != "run -- img" {
		t.Errorf("attached run: %s", d.last())
	}

	out = f.ok("docker_exec", map[string]any{"instance_id": id, "container": "web", "command": "echo 'hi'"})
	if d.last() != "exec -- web sh -lc echo 'hi'" || out["container"] != "web" || out["exit_code"].(float64) != 0 {
		t.Errorf("docker_exec: %s %v", d.last(), out)
	}
	d.set(dockerRule{pattern: "exec\\ --\\ nope*", stderr: "Error response from daemon: No such container: nope\n",
		code: 1},
		dockerRule{pattern: "exec\\ --\\ idle*",
			stderr: "Error response from daemon: container 1f2e is not running\n", code: 1},
		dockerRule{pattern: "exec*", stdout: "partial", stderr: "boom\n", code: 3})
	for container, code := range map[string]string{"nope": "CONTAINER_NOT_FOUND", "idle": "CONTAINER_NOT_FOUND",
		"web": "DOCKER_COMMAND_FAILED"} {
		e := f.fails("docker_exec", map[string]any{"instance_id": id, "container": container, "command": "ls"}, code)
		det := e["details"].(map[string]any)
		if det["command"] != "docker exec -- "+container+" sh -lc ls" || det["instance_id"] != id ||
			det["stderr"] == "" || det["exit_code"] == nil {
			t.Errorf("%s: %v", container, e)
		}
	}
	f.fails("docker_exec", map[string]any{"instance_id": id, "container": "web", "command": "ls",
		"timeout_seconds": 0}, "INVALID_ARGUMENTS")

	f.ok("docker_logs", map[string]any{"instance_id": id, "container": "web"})
	if d.last() != "logs --tail 500 -- web" {
		t.Errorf("docker_logs: %s", d.last())
	}
	f.ok("docker_logs", map[string]any{"instance_id": id, "container": "web", "tail": 20, "follow": true,
		"since": "5m"})
	if d.last() != "logs --tail 20 --follow --since 5m -- web" {
		t.Errorf("docker_logs follow: %s", d.last())
	}
}

func TestDockerListingAndCleanup(t *testing.T) {
	f, d, id := dockerFixture(t, simSpec)
	if out := f.ok("docker_ps", map[string]any{"instance_id": id, "all": true}); d.last() != "ps -a" ||
		out["all"] != true || out["command"] != "docker ps -a" {
		t.Errorf("docker_ps: %s %v", d.last(), out)
	}
	if f.ok("docker_images", map[string]any{"instance_id": id}); d.last() != "images" {
		t.Errorf("docker_images: %s", d.last())
	}
	out := f.ok("docker_cleanup", map[string]any{"instance_id": id})
	if out["mode"] != "safe" || out["command"] != "docker container prune -f && docker image prune -f" ||
		!d.ran("image prune -f") {
		t.Errorf("safe cleanup: %v", out)
	}
	out = f.ok("docker_cleanup", map[string]any{"instance_id": id, "mode": "aggressive"})
	for _, argv := range []string{"image prune -af", "network prune -f", "volume prune -f"} {
		if !d.ran(argv) || !strings.Contains(out["command"].(string), argv) {
			t.Errorf("aggressive cleanup lacks %s: %v", argv, out)
		}
	}
}

func TestDockerGates(t *testing.T) {
	f, d, id := dockerFixture(t, simSpec)
	f.fails("docker_ps", map[string]any{"instance_id": "inst_00000000"}, "INSTANCE_NOT_FOUND")
	d.set(dockerRule{pattern: "version*", code: 1})
	e := f.fails("docker_ps", map[string]any{"instance_id": id}, "RUNTIME_NOT_READY")
	if e["details"].(map[string]any)["instance_id"] != id || len(d.calls()) != 0 {
		t.Errorf("not ready: %v, calls %v", e, d.calls())
	}
	d.set()
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	f.fails("docker_images", map[string]any{"instance_id": id}, "INSTANCE_TERMINAL")
}

func TestDockerComposeAsV1(t *testing.T) {
	f, d, id := dockerFixture(t, simSpec)
	f.ok("run_command", map[string]any{"instance_id": id, "command": "mkdir -p app"})
	e := f.fails("docker_compose", map[string]any{"instance_id": id, "project_dir": "app", "action": "rm"},
		"DOCKER_COMMAND_FAILED")
	if allowed, _ := e["details"].(map[string]any)["allowed_actions"].([]any); len(allowed) != 9 {
		t.Errorf("allowed actions: %v", e)
	}
	f.fails("docker_compose", map[string]any{"instance_id": id, "project_dir": "app", "action": "exec",
		"services": []any{"api"}}, "DOCKER_COMMAND_FAILED")
	out := f.ok("docker_compose", map[string]any{"instance_id": id, "project_dir": "app", "action": "logs",
		"tail": 5, "services": []any{"api"}})
	if d.last() != "compose logs --tail 5 -- api" || out["compose_tail"].(float64) != 5 ||
		out["compose_since"] != nil || out["action"] != "logs" {
		t.Errorf("logs: %s %v", d.last(), out)
	}
	d.set(dockerRule{pattern: "compose\\ -f\\ dc.yml\\ ps\\ -q*", stdout: "c1\n"})
	out = f.ok("docker_compose", map[string]any{"instance_id": id, "project_dir": "app", "action": "UP",
		"file": "dc.yml", "services": []any{"api"}})
	if !d.ran("compose -f dc.yml up -d -- api") || out["action"] != "up" || out["project_dir"] != "app" {
		t.Errorf("up: %v %v", d.calls(), out)
	}
	bridge := out["bridge"].(map[string]any)
	if bridge["status"] != "ok" || bridge["network_status"] != "existing" ||
		bridge["containers_connected"].(float64) != 1 ||
		!d.ran("network connect lima-net-"+id+" c1") {
		t.Errorf("bridge: %v", bridge)
	}
	env := out["connection_env"].(map[string]any)
	if env["DB_HOST"] != "lima-mysql-"+id || env["DB_PASSWORD"] != "[redacted]" ||
		env["REDIS_URL"] != "redis://lima-redis-"+id+":6379/0" {
		t.Errorf("connection_env: %v", env)
	}
	hasKeys(t, "docker_compose", out, "instance_id", "project_dir", "action", "command", "compose_follow",
		"compose_since",
		"compose_tail", "bridge", "connection_env", "exit_code", "stdout", "stderr", "duration_ms")
}

func TestDockerBuildAndValidateImage(t *testing.T) {
	f, d, id := dockerFixture(t, simSpec)
	d.set(dockerRule{pattern: "image\\ inspect*", stderr: "Error: No such image: app:nogit-nodeps\n", code: 1})
	out := f.ok("docker_build", map[string]any{"instance_id": id, "context_path": ".", "image_tag": "app:dev",
		"build_args": map[string]any{"A": "1"}})
	cmd := out["command"].(string)
	if out["cache_hit"] != false || out["cached_image_tag"] != "app:nogit-nodeps" ||
		!strings.Contains(cmd, "--build-arg GIT_COMMIT=unknown") ||
		!strings.Contains(cmd, "--label git.commit= ") || !strings.Contains(cmd, "--build-arg A=1 ") ||
		!d.ran("tag -- app:dev app:nogit-nodeps") {
		t.Errorf("docker_build: %v\n%v", out, d.calls())
	}
	hasKeys(t, "docker_build", out, "instance_id", "command", "image_tag", "cached_image_tag", "cache_strategy",
		"cache_hit",
		"validation", "workspace_state", "exit_code", "stdout", "stderr", "duration_ms")
	v := f.ok("validate_image", map[string]any{"instance_id": id, "image_name": "app:dev",
		"checks": map[string]any{"max_age_hours": nil, "bogus": 1}})
	if v["valid"] != false || v["recommendation"] != "build" || v["expected_image_tag"] != "app:nogit-nodeps" ||
		v["ignored_checks"] == nil {
		t.Errorf("validate_image: %v", v)
	}
	hasKeys(t, "validate_image", v, "valid", "reasons", "warnings", "recommendation", "workspace_state",
		"image_metadata", "instance_id", "expected_image_tag")
	f.fails("validate_image", map[string]any{"instance_id": id, "image_name": "app",
		"checks": map[string]any{"git_dirty": "sometimes"}}, "INVALID_ARGUMENTS")
	f.fails("validate_image", map[string]any{"instance_id": id, "image_name": "app", "workspace_root": t.TempDir()},
		"HOST_PATH_DENIED")

	d.FreeKiB = 1 << 20
	d.set()
	e := f.fails("docker_build", map[string]any{"instance_id": id, "context_path": ".", "image_tag": "app:dev"},
		"INSUFFICIENT_DISK")
	if det := e["details"].(map[string]any); det["instance_id"] != id ||
		det["free_disk_gib_after_cleanup"].(float64) != 1 ||
		!strings.Contains(strings.Join(toStrings(det["guided_recreate_action"]), "|"),
			"destroy_instance(instance_id='"+id+"')") {
		t.Errorf("insufficient disk: %v", e)
	}
}

// Under strict validation, a prebuilt image the policy says to fail on
// stops the build.
func TestDockerBuildStrictPrebuilt(t *testing.T) {
	f, d, id := dockerFixture(t, simSpec+"[build.staleness_detection]\non_missing = \"fail\"\n")
	d.set(dockerRule{pattern: "image\\ inspect*", stderr: "Error: No such image: x\n", code: 1})
	e := f.fails("docker_build", map[string]any{"instance_id": id, "context_path": ".", "image_tag": "app:dev"},
		"PREBUILT_IMAGE_INVALID")
	built := slices.ContainsFunc(d.calls(), func(c []string) bool { return c[0] == "build" })
	if v := e["details"].(map[string]any)["validation"].(map[string]any); v["recommendation"] != "fail" || built {
		t.Errorf("strict: %v", e)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
