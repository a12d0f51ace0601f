//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// operatorPolicy gives the suite a global config of its own whose [policy]
// lets guests reach exactly port (the egress control's host server): what
// an operator who wants one host service reachable writes. It must be in
// place before the VM first starts, whose host guard it configures.
func operatorPolicy(t *testing.T, w *ws, port int) {
	home := t.TempDir()
	path := filepath.Join(home, "sandboxforge", "config.toml")
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(fmt.Sprintf("[policy]\nguest_host_ports = [%d]\n", port)), 0o644); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "XDG_CONFIG_HOME="+home)
}

// testHostGuard is issue 29's attack 3 from a real guest with the default
// network (egress = "allow"): the guest POSTs an MCP initialize to a host
// `sbf serve` through QEMU's alias for the host's loopback (192.168.5.2),
// with the Host a local client sends, and opens a plain connection to
// another loopback service of the host. QEMU's host guard refuses both
// connections outright; the port the operator named stays reachable.
func testHostGuard(t *testing.T, w *ws, allowed int) {
	mcpPort := serveMCPOnLoopback(t, w)
	plain := testutil.ServeTCP(t, func(c net.Conn) { c.Write([]byte("a host service\n")) }).Port
	post := fmt.Sprintf(`exec 3<>/dev/tcp/192.168.5.2/%d || exit 7; `+
		`body='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{},"clientInfo":{"name":"guest","version":"1"}}}'; `+
		`printf 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n`+
		`Accept: application/json, text/event-stream\r\nContent-Length: %%d\r\nConnection: close\r\n\r\n%%s' `+
		`"${#body}" "$body" >&3; timeout 10 cat <&3`, mcpPort, mcpPort)
	start := time.Now()
	r := w.sbf("", nil, "exec", "api", "--", "timeout", "20", "bash", "-c", post)
	record("host guard: the guest's POST to a host sbf serve through 192.168.5.2", start)
	if r.code == 0 || strings.Contains(r.stdout, "HTTP/1.1") {
		t.Errorf("the guest reached the host's sbf serve through 192.168.5.2: exit %d\n%s%s", r.code, r.stdout,
			r.stderr)
	}
	if guestReaches(w, "192.168.5.2", plain) {
		t.Errorf("the guest reached a loopback service of the host (port %d) through 192.168.5.2", plain)
	}
	if !guestReaches(w, "192.168.5.2", allowed) {
		t.Errorf("the guest cannot reach port %d, which [policy] guest_host_ports names", allowed)
	}
	logged := w.must("sbf egress log api --json", "egress", "log", "api", "--json").stdout
	if !strings.Contains(logged, fmt.Sprintf(`"port": %d`, mcpPort)) || !strings.Contains(logged, "host guard") {
		t.Errorf("the host guard's refusal of port %d is not in the egress log:\n%s", mcpPort, logged)
	}
	out := w.sbf("", nil, "exec", "api", "--", "bash", "-c", "getent hosts localhost; getent ahosts deb.debian.org")
	t.Logf("the guest's resolver under the host guard (Lima's host agent answers DNS):\n%s%s", out.stdout, out.stderr)
}

// serveMCPOnLoopback starts a host `sbf serve` on a loopback port, as a
// person or an agent runs it beside their VMs, and returns the port.
func serveMCPOnLoopback(t *testing.T, w *ws) int {
	c := exec.Command(os.Getenv("SBF_BIN"), "-C", w.root, "serve", "127.0.0.1:0")
	c.Env = append(os.Environ(), w.env...)
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	})
	served := testutil.Serving(t, stderr, time.Minute)
	_, port, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(served.URL, "http://"), "/mcp"))
	var n int
	fmt.Sscan(port, &n)
	return n
}
