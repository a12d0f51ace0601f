package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/spec"
)

// holdSandbox takes sandbox name's lock as another run would, until the
// test ends or the returned func lets it go.
func holdSandbox(t *testing.T, h *harness, name string) func() {
	t.Helper()
	path := filepath.Join(h.root, spec.Dir, admission.LocksDir, name+".lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := flock.Acquire(context.Background(), ownfile.PathFile(path), flock.Holder{Command: "another run"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { l.Release() }) }
	t.Cleanup(release)
	return release
}

// A run takes the lock of a sandbox only when it acts on it: an apply of
// a converged workspace neither waits for nor fails on a sandbox another
// run holds, and one that changes web alone leaves api's lock alone.
func TestARunLocksOnlyTheSandboxesItActsOn(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
	h.mustApply()
	h.eng.LockTimeout = 10 * time.Millisecond // a run that waited for api would fail
	holdSandbox(t, h, "api")
	res, err := h.apply()
	if err != nil {
		t.Fatalf("a no-op apply beside a run holding api: %v", err)
	} else if !res.Plan.Empty() {
		t.Fatalf("a no-op apply planned %s", steps(res.Plan))
	}
	if err := drivers.Driver(mustSim(t, h)).Stop(context.Background(), h.instance("web")); err != nil {
		t.Fatal(err)
	}
	res, err = h.apply()
	if err != nil {
		t.Fatalf("an apply that starts web beside a run holding api: %v", err)
	} else if steps(res.Plan) != "web:start" {
		t.Fatalf("an apply after web stopped planned %s", steps(res.Plan))
	}
}

// mustSim is the harness's sim driver.
func mustSim(t *testing.T, h *harness) Driver {
	t.Helper()
	d, err := h.driver("sim", nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// hookedList runs hook once, after its first List read the instances:
// what that listing returns is then out of date.
type hookedList struct {
	Driver
	once *sync.Once
	hook func()
}

func (l hookedList) List(ctx context.Context) ([]drivers.Instance, error) {
	list, err := l.Driver.List(ctx)
	l.once.Do(l.hook)
	return list, err
}

// engineFor is another process's engine on the harness's workspace.
func engineFor(h *harness, drv func(string, *spec.Resolved) (Driver, error)) *Engine {
	return &Engine{Clock: h.clock, Drivers: drv, HostDir: h.hostDir, Parallelism: 4, Probe: roomyHost,
		Who: flock.Holder{Command: "test", PID: os.Getpid()}, Env: h.eng.Env, LockTimeout: 2 * time.Second}
}

// A run's first plan is made holding no sandbox's lock, so another run
// may finish with a sandbox between that plan and the lock: the run then
// plans again from what the state and the backend say under the lock. Here
// run B creates api while run A's first plan, from a listing made before,
// says api has no VM; A must not create it a second time.
func TestARunPlansAgainUnderTheLocksItTakes(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	g, bDone := gatedCreate{started: make(chan string, 1), finish: make(chan struct{})}, make(chan error, 1)
	b := engineFor(h, func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		g.Driver = d
		return g, err
	})
	go func() {
		_, err := b.Apply(context.Background(), h.ws(), Options{Intent: Renew{All: true}})
		bDone <- err
	}()
	<-g.started // B holds api and is making its VM
	var once sync.Once
	var bErr error
	finishB := func() {
		close(g.finish) // B finishes after A listed
		bErr = <-bDone
	}
	t.Cleanup(func() { once.Do(finishB) }) // should A never list
	a := engineFor(h, func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		return hookedList{Driver: d, once: &once, hook: finishB}, err
	})
	res, err := a.Apply(context.Background(), h.ws(), Options{Intent: Renew{All: true}})
	if bErr != nil {
		t.Fatalf("run B: %v", bErr)
	}
	if err != nil {
		t.Fatalf("run A, after B made api: %v", err)
	}
	if creates := strings.Count(h.ops(), "create "+h.instance("api")+"\n"); creates != 1 || !res.Plan.Empty() {
		t.Errorf("run A acted on api after B made it: %s; api created %d times", steps(res.Plan), creates)
	}
	if inst := res.Observed.Instances[h.instance("api")]; inst.Status != drivers.Running {
		t.Errorf("run A observed api as %+v after B made it", inst)
	}
}
