package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// sbfBinary and serverBinary (sbf-server, beside it) are built once for
// tests that need a real process (killing it, racing two of them, MCP).
var sbfBinary, serverBinary string

func TestMain(m *testing.M) {
	dir, err := testutil.BuildSBF("sbf-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sbfBinary = filepath.Join(dir, "sbf")
	serverBinary = filepath.Join(dir, ServerBinary)
	code := m.Run()
	os.RemoveAll(dir)
	if changed := testutil.SourcesChangedSinceBuild(); len(changed) > 0 && code == 0 {
		// go test would keep this pass under the changed files, for an sbf these tests never ran.
		fmt.Fprintf(os.Stderr, "sbf's sources changed while its tests ran (%s): run them again\n",
			strings.Join(changed, ", "))
		code = 1
	}
	os.Exit(code)
}

// simWorkspace is a workspace on the sim driver with its own host state.
type simWorkspace struct {
	t    testing.TB
	root string
	env  []string
}

func newSimWorkspace(t testing.TB, specText string) *simWorkspace {
	testutil.CoverSources(t) // the sbf and sbf-server its commands run are built from them
	root := t.TempDir()
	write(t, filepath.Join(root, spec.FileName), specText)
	simStates.Store(root, filepath.Join(root, "host"))
	return &simWorkspace{t: t, root: root, env: []string{
		"HOME=" + t.TempDir(), "SBF_STATE_HOME=" + filepath.Join(root, "host"), "PATH=" + os.Getenv("PATH"),
		"NO_COLOR=1",
		policy.EnableSimVar + "=1",
	}}
}

func (w *simWorkspace) cmd(extraEnv []string, args ...string) *exec.Cmd {
	c := exec.Command(sbfBinary, append([]string{"-C", w.root}, args...)...)
	c.Env = append(append([]string{}, w.env...), extraEnv...)
	return c
}

func (w *simWorkspace) run(extraEnv []string, args ...string) result {
	w.t.Helper()
	c := w.cmd(extraEnv, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

func (w *simWorkspace) simDir() string {
	real, err := filepath.EvalSymlinks(w.root)
	if err != nil {
		w.t.Fatal(err)
	}
	return sim.WorldDir(filepath.Join(w.root, "host"), real)
}

func (w *simWorkspace) world() []string {
	entries, _ := os.ReadDir(filepath.Join(w.simDir(), "instances"))
	var names []string
	for _, e := range entries {
		// A write interrupted by SIGKILL may leave a temporary file; only
		// complete instance records count.
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && !strings.HasPrefix(name, ".") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func (w *simWorkspace) mutations() int {
	ops, err := sim.ReadLog(w.simDir())
	if err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, o := range ops {
		if o.Mutating() {
			n++
		}
	}
	return n
}

const simSpec = `
[vm]
driver = "sim"
[sandboxes.api]
[sandboxes.web]
cpus = 2
`

// The acceptance scenario, with real processes.
func TestSimLifecycleEndToEnd(t *testing.T) {
	w := newSimWorkspace(t, simSpec)
	if r := w.run(nil, "plan", "--detailed-exitcode"); r.code != 2 || !strings.Contains(r.stdout, "Plan: 2 to add") {
		t.Fatalf("first plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := w.world(); len(got) != 2 {
		t.Fatalf("world = %v", got)
	}
	before := w.mutations()
	if r := w.run(nil, "plan", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
		t.Fatalf("second plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 || w.mutations() != before {
		t.Fatalf("converged apply: exit %d, %d mutating driver calls", r.code, w.mutations()-before)
	}
	later := []string{"SBF_NOW=" + time.Now().Add(3*time.Hour).UTC().Format(time.RFC3339)}
	if r := w.run(later, "reconcile"); r.code != 0 || !strings.Contains(r.stdout, "expire") {
		t.Fatalf("reconcile past the lease: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := w.world(); len(got) != 0 {
		t.Fatalf("world after expiry = %v", got)
	}
	r := w.run(later, "status", "--json", "--all")
	var st struct {
		Sandboxes []struct {
			Name, Phase string
			Live        string `json:"live_status"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Sandboxes) != 2 {
		t.Fatalf("status: %v\n%s", err, r.stdout)
	}
	for _, s := range st.Sandboxes {
		if s.Phase != "expired" || s.Live != "absent" {
			t.Errorf("%s: phase %s live %s", s.Name, s.Phase, s.Live)
		}
	}
}

// Killing apply at any point leaves a readable state, and the next apply
// converges with nothing leaked.
func TestKilledApplyConvergesOnRerun(t *testing.T) {
	delays := []time.Duration{0, 20 * time.Millisecond, 90 * time.Millisecond, 160 * time.Millisecond,
		260 * time.Millisecond, 380 * time.Millisecond, 520 * time.Millisecond, 700 * time.Millisecond}
	slow := []string{"SBF_SIM_LATENCY=create=120ms,start=80ms,stop=40ms,delete=40ms,reconfigure=30ms"}
	for _, delay := range delays {
		t.Run(delay.String(), func(t *testing.T) {
			w := newSimWorkspace(t, simSpec+"[sandboxes.db]\n")
			c := w.cmd(slow, "apply", "--auto-approve", "--parallelism", "1")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(delay)
			c.Process.Signal(syscall.SIGKILL)
			c.Wait()
			if _, err := state.Read(filepath.Join(w.root, spec.Dir), w.root, ""); err != nil {
				t.Fatalf("state after SIGKILL at %s: %v", delay, err)
			}
			if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 {
				t.Fatalf("rerun: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := w.run(nil, "plan", "--detailed-exitcode"); r.code != 0 {
				t.Fatalf("plan after rerun: exit %d\n%s", r.code, r.stdout)
			}
			if got := w.world(); len(got) != 3 {
				t.Errorf("world = %v, want exactly the 3 declared sandboxes", got)
			}
			// Now kill a destroy halfway: the rerun must leave nothing behind.
			c = w.cmd(slow, "destroy", "--auto-approve", "--parallelism", "1")
			c.Start()
			time.Sleep(delay)
			c.Process.Signal(syscall.SIGKILL)
			c.Wait()
			if r := w.run(nil, "destroy", "--auto-approve"); r.code != 0 {
				t.Fatalf("destroy rerun: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if got := w.world(); len(got) != 0 {
				t.Errorf("leaked after destroy: %v", got)
			}
		})
	}
}

// Two applies at once: one waits or fails clearly; state stays sound.
func TestConcurrentAppliesNeverCorruptState(t *testing.T) {
	w := newSimWorkspace(t, simSpec)
	slow := []string{"SBF_SIM_LATENCY=create=1500ms"}
	first := w.cmd(slow, "apply", "--auto-approve")
	var firstOut bytes.Buffer
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitForHolder(t, w, "sbf apply")
	r := w.run(nil, "apply", "--auto-approve")
	if r.code != 1 || !strings.Contains(r.stderr, "is locked by \"sbf apply\"") ||
		!strings.Contains(r.stderr, "--lock-timeout") {
		t.Errorf("second apply: exit %d, stderr %q", r.code, r.stderr)
	}
	waiter := w.run(nil, "apply", "--auto-approve", "--lock-timeout", "30s")
	if err := first.Wait(); err != nil {
		t.Fatalf("first apply: %v\n%s", err, firstOut.String())
	}
	if waiter.code != 0 {
		t.Errorf("waiting apply: exit %d\n%s", waiter.code, waiter.stderr)
	}
	if _, err := state.Read(filepath.Join(w.root, spec.Dir), w.root, ""); err != nil {
		t.Fatal(err)
	}
	if got := w.world(); len(got) != 2 {
		t.Errorf("world = %v", got)
	}
}

// While an apply runs, plan and status say so instead of reporting the
// half-done world as drift; with --lock-timeout they wait for it.
func TestPlanAndStatusDuringAnApply(t *testing.T) {
	t.Parallel()
	w := newSimWorkspace(t, simSpec)
	if r := w.run(nil, "apply", "--auto-approve", "--target", "api"); r.code != 0 {
		t.Fatalf("first apply: %s", r.stderr)
	}
	slow := w.cmd([]string{"SBF_SIM_LATENCY=create=3s"}, "apply", "--auto-approve")
	if err := slow.Start(); err != nil {
		t.Fatal(err)
	}
	defer slow.Wait()
	waitForHolder(t, w, "sbf apply")
	r := w.run(nil, "status", "--json")
	var st struct {
		InProgress *struct{ Command string } `json:"in_progress"`
		Sandboxes  []struct{ Name, Drift string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.InProgress == nil ||
		st.InProgress.Command != "sbf apply" {
		t.Fatalf("status during an apply: %v\n%s", err, r.stdout)
	}
	for _, s := range st.Sandboxes {
		if s.Drift != "" {
			t.Errorf("%s: drift %q reported mid-apply", s.Name, s.Drift)
		}
	}
	if p := w.run(nil, "plan"); !strings.Contains(p.stdout, `"sbf apply"`) || !strings.Contains(p.stdout, "glimpse") {
		t.Errorf("plan during an apply does not say so:\n%s", p.stdout)
	}
	waited := w.run(nil, "status", "--json", "--lock-timeout", "30s")
	if strings.Contains(waited.stdout, `"in_progress": {`) || strings.Count(waited.stdout, `"phase": "running"`) != 2 {
		t.Errorf("status --lock-timeout did not wait for the apply:\n%s", waited.stdout)
	}
}

// `sbf reconcile --watch --json` writes one JSON object per line, one line
// per pass, so a reader can follow it as it comes.
func TestReconcileWatchJSONIsOneObjectPerLine(t *testing.T) {
	w := newSimWorkspace(t, simSpec)
	if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %s", r.stderr)
	}
	c := w.cmd([]string{"SBF_NOW=2099-01-01T00:00:00Z"}, "reconcile", "--watch", "--json", "--interval", "200ms")
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Signal(syscall.SIGTERM); c.Wait() }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var kinds []string
	for i := 0; i < 2; i++ {
		select {
		case line, ok := <-lines:
			var pass struct {
				Time string
				Plan struct{ Changes []struct{ Action string } }
			}
			if !ok || json.Unmarshal([]byte(line), &pass) != nil || pass.Time == "" {
				t.Fatalf("line %d is not one JSON object: %q", i, line)
			}
			kinds = append(kinds, fmt.Sprint(len(pass.Plan.Changes)))
		case <-time.After(20 * time.Second):
			t.Fatal("no pass reported")
		}
	}
	if kinds[0] != "2" || kinds[1] != "0" {
		t.Errorf("changes per pass = %v, want the two expiries, then nothing", kinds)
	}
}

// waitForHolder waits until command holds the lock of the sandbox web (a
// run holds its sandboxes' locks throughout; the state lock only while it
// writes): a process just started may not have taken it yet on a loaded
// machine.
func waitForHolder(t *testing.T, w *simWorkspace, command string) {
	t.Helper()
	lock := filepath.Join(w.root, spec.Dir, "locks", "web.lock")
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if h := flock.ReadHolder(ownfile.PathFile(lock)); h != nil && h.Command == command {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q never took the sandbox lock %s", command, lock)
		}
	}
}
