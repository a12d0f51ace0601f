package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An MCP client that kills `sbf mcp` (SIGKILL, after its grace period)
// takes sbf-server with it: no reconcile loop is left running for nobody.
func TestKilledMCPHandOffTakesTheServerWithIt(t *testing.T) {
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	c := w.cmd(nil, "mcp")
	// Input kept open (Wait would close a StdinPipe): the server must not
	// end for want of it.
	in, keep, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	c.Stdin = in
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	in.Close()
	var server int
	for deadline := time.Now().Add(10 * time.Second); server == 0 && time.Now().Before(deadline); {
		// The child belongs to the thread that started it (handOff locks one),
		// not always the main one: look at every thread's children.
		lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", c.Process.Pid))
		for _, l := range lists {
			if kids, _ := os.ReadFile(l); server == 0 {
				server, _ = strconv.Atoi(strings.TrimSpace(string(kids)))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if server == 0 {
		t.Fatal("sbf mcp started no sbf-server")
	}
	c.Process.Kill()
	c.Wait()
	for deadline := time.Now().Add(10 * time.Second); processAlive(server); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(server, syscall.SIGKILL)
			t.Fatalf("sbf-server (pid %d) still runs 10 s after its sbf was killed", server)
		}
	}
}
