package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `sbf mcp` is one process: sbf becomes sbf-server (same pid) instead of
// waiting for it as its child, so the client's process is the server
// (issue 42.5: the waiting parent held 19 MiB), it answers there, and a
// client that kills it (SIGKILL, after its grace period) leaves no server
// running for nobody.
func TestMCPHandOffIsOneProcess(t *testing.T) {
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	c := w.cmd(nil, "mcp")
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{},"clientInfo":{"name":"one","version":"1"}}}`)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, `"serverInfo"`) {
		t.Fatalf("initialize: %v %q", err, line)
	}
	pid := c.Process.Pid
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || filepath.Base(exe) != ServerBinary {
		t.Errorf("the process the client started runs %q (%v), not %s", exe, err, ServerBinary)
	}
	if kib, procs := treeRSS(pid); procs != 1 {
		t.Errorf("sbf mcp runs as %d processes (%.0f KiB in all)", procs, kib)
	}
	c.Process.Kill()
	c.Wait()
	for deadline := time.Now().Add(10 * time.Second); processAlive(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("sbf mcp (pid %d) still runs 10 s after it was killed", pid)
		}
	}
}
