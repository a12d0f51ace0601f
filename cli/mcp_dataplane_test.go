//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// The official TypeScript SDK drives the data plane on the sim driver:
// create → run_command (exit 42 is a result) → copy in and out → sync with
// excludes → a background task that outlives a server restart and is
// stopped → artifacts → destroy. mcpserver/testdata/tsclient/dataplane.mjs
// holds the calls and their assertions; these tests start and restart the
// server between its two phases.

func TestTypeScriptSDKDataPlaneOverStdio(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	ensureTSClient(t)
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	stateFile := dataPlaneStateFile(t)
	// Each phase spawns its own `sbf mcp`: closing the first phase's
	// client ends its server.
	runDataPlane(t, w, "start", "stdio", sbfBinary, stateFile)
	saved := readDataPlaneState(t, stateFile)
	if saved.ServerPID <= 0 {
		t.Fatalf("the first phase did not record its server's pid: %+v", saved)
	}
	if processAlive(saved.ServerPID) {
		t.Fatalf("the first sbf mcp (pid %d) still runs after its client closed", saved.ServerPID)
	}
	if !processAlive(saved.TaskPID) {
		t.Fatalf("the task (pid %d) did not survive its server", saved.TaskPID)
	}
	runDataPlane(t, w, "resume", "stdio", sbfBinary, stateFile)
	if got := w.world(); len(got) != 0 {
		t.Errorf("world after destroy = %v", got)
	}
}

func TestTypeScriptSDKDataPlaneOverHTTP(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	ensureTSClient(t)
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	stateFile := dataPlaneStateFile(t)
	served, stop := startStoppableServe(t, w)
	runDataPlane(t, w, "start", "http", served.URL, stateFile, "SBF_TOKEN_FILE="+served.TokenFile)
	stop()
	saved := readDataPlaneState(t, stateFile)
	if !processAlive(saved.TaskPID) {
		t.Fatalf("the task (pid %d) did not survive sbf serve's exit", saved.TaskPID)
	}
	served, _ = startStoppableServe(t, w)
	runDataPlane(t, w, "resume", "http", served.URL, stateFile, "SBF_TOKEN_FILE="+served.TokenFile)
	if got := w.world(); len(got) != 0 {
		t.Errorf("world after destroy = %v", got)
	}
}

func runDataPlane(t *testing.T, w *simWorkspace, phase, mode, target, stateFile string, env ...string) {
	t.Helper()
	c := exec.Command("node", "dataplane.mjs", phase, mode, target, w.root, stateFile)
	c.Dir = ensureTSClient(t)
	c.Env = append(append(slices.Clone(w.env), "SBF_SIM_WORLD="+w.simDir()), env...)
	start := time.Now()
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("TypeScript SDK data plane (%s over %s): %v\n%s", phase, mode, err, out)
	}
	t.Logf("%s over %s: %s", phase, mode, time.Since(start).Round(time.Millisecond))
}

// dataPlaneStateFile is where the first phase leaves its ids. Should a
// phase fail, the task it started is ended with the test.
func dataPlaneStateFile(t *testing.T) string {
	file := filepath.Join(t.TempDir(), "state.json")
	t.Cleanup(func() {
		var s dataPlaneState
		if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &s) == nil && processAlive(s.TaskPID) {
			syscall.Kill(-s.TaskPID, syscall.SIGKILL) // the task leads its own process group
		}
	})
	return file
}

type dataPlaneState struct {
	TaskPID   int `json:"task_pid"`
	ServerPID int `json:"server_pid"`
}

func readDataPlaneState(t *testing.T, file string) dataPlaneState {
	t.Helper()
	var s dataPlaneState
	b, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil || s.TaskPID <= 0 {
		t.Fatalf("the first phase's state %s: %v (%+v)", file, err, s)
	}
	return s
}

// processAlive says whether a process exists and is not a zombie (a
// process whose parent is gone may wait unreaped).
func processAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: kill -0 is the answer
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// startStoppableServe runs `sbf serve` on a free port and returns its MCP
// endpoint and a function that stops it (SIGTERM, then waits for the exit).
func startStoppableServe(t *testing.T, w *simWorkspace, extra ...string) (testutil.Served, func()) {
	t.Helper()
	c := w.cmd(nil, append([]string{"serve", "127.0.0.1:0"}, extra...)...)
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			c.Process.Kill()
			<-done
			t.Error("sbf serve did not stop within 20s of SIGTERM")
		}
	}
	t.Cleanup(stop)
	return testutil.Serving(t, stderr, 20*time.Second), stop
}
