package reconcile

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/sandbox"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/broker"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
)

// keeper is a backend that keeps connections (a drivers.Connector) and
// answers every command itself.
type keeper struct {
	Driver
	via string
}

func (k keeper) Exec(context.Context, string, drivers.ExecRequest) (drivers.ExecResult, error) {
	return drivers.ExecResult{Via: k.via}, nil
}
func (keeper) Alive(string) bool { return true }
func (keeper) Close() error      { return nil }

// keeperName is a registered backend that declares it keeps connections;
// keeperTarget's sandbox claims it.
const keeperName = "keepertest"

// keeperTarget is sandbox api of a sim workspace whose backend keeps
// connections (so brokers apply); plain is the sim's own factory. The
// backend is built only when asked (builds counts it).
func keeperTarget(t *testing.T) (h *harness, plain DriverFactory, tgt *sandbox.Target, builds *atomic.Int32) {
	if _, ok := drivers.Lookup(keeperName); !ok {
		drivers.Register(drivers.Registration{Name: keeperName, TestOnly: true, Zero: keeper{},
			New: func(context.Context, drivers.Env) (drivers.Driver, error) {
				return nil, errors.New("built through the engine's factory only")
			}})
	}
	h = newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.mustApply()
	plain = h.eng.Drivers
	builds = new(atomic.Int32)
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		builds.Add(1)
		d, err := plain(name, r)
		return keeper{Driver: d, via: "direct"}, err
	}
	tgt, err := h.eng.Target(h.ws(), "api")
	if err != nil {
		t.Fatal(err)
	}
	tgt.DriverName = keeperName
	return h, plain, tgt, builds
}

func TestExecGoesThroughABrokerItStarts(t *testing.T) {
	h, plain, tgt, builds := keeperTarget(t)
	sock := filepath.Join(t.TempDir(), "api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := 0
	b := sandbox.Brokers{Socket: func(string, string) string { return sock }, Start: func(*sandbox.Target) error {
		started++
		ln, err := net.Listen("unix", sock)
		if err != nil {
			return err
		}
		go broker.Serve(ctx, ln, func(context.Context, drivers.ExecRequest) (drivers.ExecResult, error) {
			return drivers.ExecResult{Via: "broker"}, nil
		}, time.Minute, clock.Real{})
		return nil
	}}
	tgt.Brokers = b
	for range 2 {
		res, err := tgt.ExecBrokered(ctx, drivers.ExecRequest{Command: "true"})
		if err != nil || res.Via != "broker" {
			t.Fatalf("exec: %+v %v", res, err)
		}
	}
	if started != 1 {
		t.Errorf("brokers started: %d, want 1 (the second command reuses it)", started)
	}
	if n := builds.Load(); n != 0 {
		t.Errorf("commands a broker served built the backend %d times; its registration says enough", n)
	}
	// A backend that keeps no connection (the sim) is asked directly.
	h.eng.Drivers = plain
	tgt, _ = h.eng.Target(h.ws(), "api")
	tgt.Brokers = b
	if res, err := tgt.ExecBrokered(ctx, drivers.ExecRequest{Command: "true"}); err != nil || res.Via != "sim" ||
		started != 1 {
		t.Errorf("the sim through ExecBrokered: %+v %v (brokers started %d)", res, err, started)
	}
}

// The file tools and stats of a target with brokers go through them as
// sbf exec does (each sbf cat would otherwise dial the VM anew).
func TestFileToolsGoThroughTheBroker(t *testing.T) {
	_, _, tgt, _ := keeperTarget(t)
	sock := filepath.Join(t.TempDir(), "api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex // the broker answers on its own goroutine
	var brokered []string
	seen := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(brokered) }
	tgt.Brokers = sandbox.Brokers{Socket: func(string, string) string { return sock }, Start: func(*sandbox.Target) error {
		ln, err := net.Listen("unix", sock)
		if err != nil {
			return err
		}
		go broker.Serve(ctx, ln, func(_ context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
			mu.Lock()
			brokered = append(brokered, req.Command)
			mu.Unlock()
			return drivers.ExecResult{Via: "broker", Stdout: "5\nhello"}, nil
		}, time.Minute, clock.Real{})
		return nil
	}}
	r, err := tgt.ReadFile(ctx, "/etc/hostname", 0, 0)
	if ran := seen(); err != nil || string(r.Data) != "hello" || len(ran) != 1 || !strings.Contains(ran[0], "head -c") {
		t.Errorf("read_file: %+v %v; the broker ran %q", r, err, ran)
	}
	tgt.Stats(ctx) // its answer is no stats; only where it went counts
	if ran := seen(); len(ran) != 2 || !strings.Contains(ran[1], "@@meminfo") {
		t.Errorf("stats did not go through the broker: %q", ran)
	}
}
