//go:build e2e

package e2e

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testAgentTools: the tools of issue 24 on a real Lima VM. Guest files
// through MCP (paths are the VM's own), a guest web server reached from
// the host through expose_port and through sbf port-forward (both over
// the kept SSH connection), stats from the VM's /proc, and the history of
// it all.
func testAgentTools(t *testing.T, w *ws, instance string) {
	m := w.mcp()
	defer m.close()
	defer limaLogsOnFailure(t)
	defer m.logOnFailure(t)
	blob := []byte{0, 1, 2, 255}
	m.call("write_file", map[string]any{"instance_id": instance, "path": "/tmp/at/blob", "make_parents": true,
		"content": base64.StdEncoding.EncodeToString(blob), "encoding": "base64", "mode": "0600"})
	if r := m.call("run_command", map[string]any{"instance_id": instance,
		"command": "stat -c %a /tmp/at/blob; od -An -tx1 /tmp/at/blob"}); r["stdout"] != "600\n 00 01 02 ff\n" {
		t.Errorf("the VM holds %q", r["stdout"])
	}
	if r := m.call("read_file", map[string]any{"instance_id": instance, "path": "/etc/os-release"}); !strings.Contains(
		r["content"].(string), "ID=") {
		t.Errorf("read_file /etc/os-release: %v", r)
	}
	if l := m.call("list_files", map[string]any{"instance_id": instance, "path": "/tmp/at"}); l["count"] != float64(1) {
		t.Errorf("list_files: %v", l)
	}
	st := m.call("get_instance_stats", map[string]any{"instance_id": instance})
	if st["shared_with_host"] != false || st["partial"] != false {
		t.Errorf("stats: %v", st)
	}

	if r := m.call("run_command", map[string]any{"instance_id": instance,
		"command": "command -v python3"}); r["exit_code"] != float64(0) {
		t.Skip("the guest image has no python3 to serve HTTP with")
	}
	task := m.call("start_background_task", map[string]any{"instance_id": instance,
		"command": "mkdir -p /tmp/www && echo from-the-vm > /tmp/www/index.html && " +
			"exec python3 -m http.server 8123 --bind 127.0.0.1 --directory /tmp/www"})
	defer m.call("stop_task", map[string]any{"task_id": task["task_id"], "force": true})
	// A connection to a port nothing listens on yet is closed at once;
	// python's start on an emulated CPU takes seconds.
	if r := m.call("run_command", map[string]any{"instance_id": instance, "command": "for i in $(seq 300); do " +
		"ss -ltn | grep -q '127.0.0.1:8123 ' && exit 0; sleep 0.2; done; exit 1"}); r["exit_code"] != float64(0) {
		t.Fatalf("python's http.server never listened in the VM: %v; its task: %v", r,
			m.call("get_task_logs", map[string]any{"task_id": task["task_id"]}))
	}
	start := time.Now()
	e := m.call("expose_port", map[string]any{"instance_id": instance, "port": 8123})
	if body := httpGet(t, e["url"].(string)+"/index.html"); body != "from-the-vm\n" {
		t.Errorf("GET through expose_port: %q", body)
	}
	record("expose_port + first GET", start)
	m.call("unexpose_port", map[string]any{"instance_id": instance, "port": 8123})

	c := exec.Command(os.Getenv("SBF_BIN"), "-C", w.root, "port-forward", "api", ":8123")
	c.Env = append(os.Environ(), w.env...)
	var stderr strings.Builder
	c.Stderr = &stderr
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	addr := regexp.MustCompile(`127\.0\.0\.1:\d+`).FindString(line)
	if body := httpGet(t, "http://"+addr+"/index.html"); body != "from-the-vm\n" {
		t.Errorf("GET through sbf port-forward (%q): %q", line, body)
	}
	c.Process.Signal(syscall.SIGINT)
	if err := c.Wait(); err != nil {
		t.Errorf("sbf port-forward after Ctrl-C: %v", err)
	}
	if t.Failed() {
		t.Logf("sbf port-forward's stderr:\n%s", stderr.String())
	}

	h := m.call("get_history", map[string]any{"instance_id": instance})
	if raw, _ := json.Marshal(h); !strings.Contains(string(raw), `"tool":"expose_port"`) {
		t.Errorf("history: %v", h)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	res, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
