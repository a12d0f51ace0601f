//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The build context and compose project testMCPDocker copies into the
// guest. Everything comes from the busybox image the suite imports (no
// registry is reachable); busybox's applets are named in full, as the
// imported rootfs has only /bin/busybox, /bin/sh and /bin/httpd.
const (
	dockerfileE2E = "FROM sbf-e2e/busybox:1\nRUN echo built > /built.txt\n"
	composeE2E    = `services:
  hello:
    image: sbf-e2e/busybox:1
    pull_policy: never
    command: ["/bin/busybox", "sh", "-c", "echo compose-hello; exec /bin/busybox sleep 86400"]
`
)

// testMCPDocker calls each Docker tool v1 had, through a real `sbf mcp`,
// against the guest's real Docker on the suite's VM (no extra boot):
// docker_build twice (the second a [build] cache hit), docker_run,
// docker_logs, docker_exec, docker_compose up/ps/logs/down, docker_images,
// docker_cleanup and validate_image.
func testMCPDocker(t *testing.T, w *ws, instance string) {
	// The classic builder takes FROM from the guest's images; BuildKit may
	// first ask a registry for the base image's metadata, and none is
	// reachable here.
	w.write(".sandboxforge.toml", specText(2, true)+"\n[build]\nenable_buildkit = false\n")
	defer w.write(".sandboxforge.toml", specText(2, true))
	rootfs := os.Getenv("SBF_E2E_ROOTFS")
	m := w.mcp("--allow-path", filepath.Dir(rootfs))
	defer m.close()
	call := func(step, tool string, args map[string]any) map[string]any {
		t.Helper()
		args["instance_id"] = instance
		start := time.Now()
		out := m.call(tool, args)
		record(step, start)
		return out
	}
	ensureBusybox(t, m, instance, rootfs)
	defer m.try("run_command", map[string]any{"instance_id": instance, "command": "docker rm -f e2e-logs"})

	w.write("e2e-build/Dockerfile", dockerfileE2E)
	m.call("copy_to_instance", map[string]any{"instance_id": instance, "local_path": "e2e-build",
		"remote_path": "/tmp/e2e-build"})
	built := call("docker_build (a local Dockerfile on the imported busybox)", "docker_build",
		map[string]any{"context_path": "/tmp/e2e-build", "image_tag": "sbf-e2e/built:1"})
	// Tagged for the cache too: sbf-e2e/built:nogit-nodeps (the workspace is no git repository and has
	// no dependency files).
	if cached, _ := built["cached_image_tag"].(string); built["exit_code"] != float64(0) ||
		built["cache_hit"] != false || !strings.HasPrefix(cached, "sbf-e2e/built:") || cached == "sbf-e2e/built:1" {
		t.Fatalf("docker_build: %v", built)
	}
	again := call("docker_build again ([build] cache hit)", "docker_build",
		map[string]any{"context_path": "/tmp/e2e-build", "image_tag": "sbf-e2e/built:1"})
	if again["cache_hit"] != true || again["command"] != "cached-image-reuse" {
		t.Errorf("the second docker_build did not reuse the cached image: %v", again)
	}
	v := call("validate_image", "validate_image", map[string]any{"image_name": "sbf-e2e/built:1"})
	if v["valid"] != true || v["recommendation"] != "reuse" {
		t.Errorf("validate_image of the image just built: %v", v)
	}

	ran := call("docker_run (detached)", "docker_run", map[string]any{"image": "sbf-e2e/built:1",
		"name": "e2e-logs", "command": "echo log-line; exec /bin/busybox sleep 86400"})
	if ran["exit_code"] != float64(0) || ran["container"] == nil {
		t.Fatalf("docker_run: %v", ran)
	}
	logs := waitFor(t, func() map[string]any {
		return m.call("docker_logs", map[string]any{"instance_id": instance, "container": "e2e-logs"})
	}, "stdout", "log-line")
	if logs["exit_code"] != float64(0) {
		t.Errorf("docker_logs: %v", logs)
	}
	if ex := call("docker_exec", "docker_exec", map[string]any{"container": "e2e-logs",
		"command": "/bin/busybox cat /built.txt"}); ex["exit_code"] != float64(0) || ex["stdout"] != "built\n" {
		t.Errorf("docker_exec in the built image: %v", ex)
	}

	testMCPCompose(t, w, m, instance, call)

	if im := call("docker_images", "docker_images", map[string]any{}); !strings.Contains(fmt.Sprint(im["stdout"]),
		"sbf-e2e/built") || !strings.Contains(fmt.Sprint(im["stdout"]), "sbf-e2e/busybox") {
		t.Errorf("docker_images: %v", im)
	}
	if r := call("docker_run (attached, exits)", "docker_run", map[string]any{"image": "sbf-e2e/busybox:1",
		"name": "e2e-done", "detach": false, "command": "echo done-once"}); !strings.Contains(fmt.Sprint(r["stdout"]),
		"done-once") {
		t.Errorf("attached docker_run: %v", r)
	}
	if c := call("docker_cleanup (safe)", "docker_cleanup", map[string]any{}); c["exit_code"] != float64(0) ||
		c["mode"] != "safe" {
		t.Errorf("docker_cleanup: %v", c)
	}
	ps := m.call("docker_ps", map[string]any{"instance_id": instance, "all": true})
	if out := fmt.Sprint(ps["stdout"]); strings.Contains(out, "e2e-done") || !strings.Contains(out, "e2e-logs") {
		t.Errorf("after docker_cleanup, the exited container should be gone and the running one kept:\n%s", out)
	}
}

// testMCPCompose runs a compose project of its own (not the sandbox's
// stack) through docker_compose: up, ps, logs, down.
func testMCPCompose(t *testing.T, w *ws, m *mcpSession, instance string,
	call func(step, tool string, args map[string]any) map[string]any) {
	w.write("e2e-proj/compose.yaml", composeE2E)
	m.call("copy_to_instance", map[string]any{"instance_id": instance, "local_path": "e2e-proj",
		"remote_path": "/tmp/e2e-proj"})
	compose := func(action string) map[string]any {
		return call("docker_compose "+action, "docker_compose", map[string]any{"project_dir": "/tmp/e2e-proj",
			"action": action})
	}
	if up := compose("up"); up["exit_code"] != float64(0) || up["action"] != "up" {
		t.Fatalf("docker_compose up: %v", up)
	}
	defer func() {
		if down := compose("down"); down["exit_code"] != float64(0) {
			t.Errorf("docker_compose down: %v", down)
		}
		ps := m.call("docker_ps", map[string]any{"instance_id": instance, "all": true})
		if strings.Contains(fmt.Sprint(ps["stdout"]), "e2e-proj") {
			t.Errorf("containers of the project after down:\n%s", ps["stdout"])
		}
	}()
	if ps := compose("ps"); !strings.Contains(fmt.Sprint(ps["stdout"]), "hello") {
		t.Errorf("docker_compose ps: %v", ps)
	}
	waitFor(t, func() map[string]any {
		return m.call("docker_compose", map[string]any{"instance_id": instance, "project_dir": "/tmp/e2e-proj",
			"action": "logs"})
	}, "stdout", "compose-hello")
}

// ensureBusybox imports the suite's busybox image unless the compose
// subtest already did.
func ensureBusybox(t *testing.T, m *mcpSession, instance, rootfs string) {
	im := m.call("docker_images", map[string]any{"instance_id": instance})
	if strings.Contains(fmt.Sprint(im["stdout"]), "sbf-e2e/busybox") {
		return
	}
	m.call("copy_to_instance", map[string]any{"instance_id": instance, "local_path": rootfs,
		"remote_path": "/tmp/rootfs.tar"})
	if r := m.call("run_command", map[string]any{"instance_id": instance,
		"command": "docker import /tmp/rootfs.tar sbf-e2e/busybox:1"}); r["exit_code"] != float64(0) {
		t.Fatalf("docker import: %v", r)
	}
}

// waitFor calls get until its result's field contains want (a container's
// output arrives after it starts), for up to 30 s.
func waitFor(t *testing.T, get func() map[string]any, field, want string) map[string]any {
	t.Helper()
	var out map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		out = get()
		if strings.Contains(fmt.Sprint(out[field]), want) || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(fmt.Sprint(out[field]), want) {
		t.Errorf("%s never held %q: %v", field, want, out)
	}
	return out
}
