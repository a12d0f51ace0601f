package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/sandbox"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/guest/composefile"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/hostcap"
	"github.com/sandboxforge/sbf/spec"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// harness is a workspace on the sim driver with a fake clock: the engine
// end to end, with real files, locks and state.
type harness struct {
	t       testing.TB
	root    string
	simDir  string
	hostDir string
	clock   *clock.Fake
	faults  string
	latency string
	boot    string // SBF_SIM_BOOT
	// simClock, when set, is the sim's clock (its latencies pass on it);
	// default the fake clock the engine uses.
	simClock clock.Clock
	eng      *Engine
	guests   *guestWorld // when set, sim instances have fake Docker guests
	volatile bool        // the sim syncs nothing (SBF_SIM_VOLATILE): a benchmark measures the engine
}

func newHarness(t testing.TB, specText string) *harness {
	t.Helper()
	root := t.TempDir()
	h := &harness{t: t, root: root, simDir: filepath.Join(root, "world"), hostDir: filepath.Join(root, "host"),
		clock: clock.NewFake(t0)}
	h.writeSpec(specText)
	h.eng = &Engine{
		Clock:       h.clock,
		Drivers:     h.driver,
		HostDir:     h.hostDir,
		Parallelism: 4,
		Who:         flock.Holder{Command: "test", PID: os.Getpid()},
		Probe:       roomyHost,
		Env:         LayerEnv{Compose: composefile.LoadProject},
	}
	return h
}

func (h *harness) driver(name string, _ *spec.Resolved) (Driver, error) {
	if name != sim.Name {
		return nil, &drivers.UnavailableError{Driver: name, Reason: "not in tests"}
	}
	var c clock.Clock = h.clock
	if h.simClock != nil {
		c = h.simClock
	}
	d, err := sim.New(sim.Options{Dir: h.simDir, Faults: h.faults, Latency: h.latency, Boot: h.boot, Clock: c,
		Volatile: h.volatile})
	if err != nil || h.guests == nil {
		return d, err
	}
	if h.guests.sockets {
		return socketGuestSim{guestSim{Driver: d, world: h.guests}}, nil
	}
	return guestSim{Driver: d, world: h.guests}, nil
}

func (h *harness) writeSpec(text string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.root, spec.FileName), []byte(text), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) ws() spec.Options {
	return spec.Options{Root: h.root, Host: spec.Host{OS: "linux", Arch: "amd64"}}
}

func (h *harness) converge(opts Options) (*Result, error) {
	return h.eng.Apply(context.Background(), h.ws(), opts)
}

func (h *harness) planWith(opts Options) (*Result, error) {
	return h.eng.Plan(context.Background(), h.ws(), opts)
}

// apply is `sbf apply --auto-approve`.
func (h *harness) apply() (*Result, error) { return h.converge(Options{Intent: Renew{All: true}}) }

// reconcile is one pass of the watch loop.
func (h *harness) reconcile() (*Result, error) { return h.converge(passOptions()) }

func (h *harness) mustApply() *Result {
	h.t.Helper()
	res, err := h.apply()
	if err != nil {
		h.t.Fatalf("apply: %v", err)
	}
	return res
}

func (h *harness) plan() *plan.Plan {
	h.t.Helper()
	res, err := h.planWith(Options{Intent: Renew{All: true}})
	if err != nil {
		h.t.Fatalf("plan: %v", err)
	}
	return res.Plan
}

// world lists the sim world by instance name.
func (h *harness) world() map[string]drivers.Instance {
	h.t.Helper()
	d, _ := sim.New(sim.Options{Dir: h.simDir})
	list, err := d.List(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]drivers.Instance{}
	for _, i := range list {
		out[i.Name] = i
	}
	return out
}

// mutations counts the operations that changed the world since the mark.
func (h *harness) mutations(since int) (int, []sim.Op) {
	ops, err := sim.ReadLog(h.simDir)
	if err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for _, o := range ops[since:] {
		if o.Mutating() {
			n++
		}
	}
	return n, ops
}

func (h *harness) logLen() int {
	_, ops := h.mutations(0)
	return len(ops)
}

func (h *harness) instance(sandbox string) string {
	h.t.Helper()
	_, id, err := spec.WorkspaceIdentity(h.root)
	if err != nil {
		h.t.Fatal(err)
	}
	return drivers.InstanceName(id, sandbox)
}

// roomyHost is a host every test VM fits on, whatever machine runs them.
func roomyHost(string) hostcap.Capacity {
	mem, disk := 256.0, 4096.0
	return hostcap.Capacity{CPUs: 64, MemoryAvailableGiB: &mem, DiskFreeGiB: &disk}
}

// ops lists the sim's operations so far, one "op instance" per line.
func (h *harness) ops() string {
	h.t.Helper()
	list, err := sim.ReadLog(h.simDir)
	if err != nil {
		h.t.Fatal(err)
	}
	var b strings.Builder
	for _, op := range list {
		fmt.Fprintf(&b, "%s %s\n", op.Op, op.Instance)
	}
	return b.String()
}

func (h *harness) mustApplyWith(opts Options) *Result {
	h.t.Helper()
	res, err := h.converge(opts)
	if err != nil {
		h.t.Fatalf("apply: %v", err)
	}
	return res
}

func (h *harness) target(t *testing.T, sandbox string) *sandbox.Target {
	t.Helper()
	tgt, err := h.eng.Target(h.ws(), sandbox)
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

func execReq(cmd string) drivers.ExecRequest {
	return drivers.ExecRequest{Command: cmd, Timeout: 10 * time.Second}
}

// fmtPIDGroup counts the live (not zombie) processes of a process group.
func fmtPIDGroup(pgid int) string {
	return fmt.Sprintf("sleep 0.3; ps -e -o pgid=,stat= | awk '$1 == %d && $2 !~ /^Z/' | wc -l", pgid)
}

// passOptions are a loop pass's: no lease changes.
func passOptions() Options { return Options{Intent: Reconcile{}} }
