package reconcile

import (
	"context"
	"net"
	"path/filepath"
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

func TestExecGoesThroughABrokerItStarts(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.mustApply()
	plain := h.eng.Drivers
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := plain(name, r)
		return keeper{Driver: d, via: "direct"}, err
	}
	tgt, err := h.eng.Target(h.ws(), "api")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := 0
	b := sandbox.Brokers{Socket: func(string) string { return sock }, Start: func(*sandbox.Target) error {
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
	for range 2 {
		res, err := tgt.ExecBrokered(ctx, drivers.ExecRequest{Command: "true"}, b)
		if err != nil || res.Via != "broker" {
			t.Fatalf("exec: %+v %v", res, err)
		}
	}
	if started != 1 {
		t.Errorf("brokers started: %d, want 1 (the second command reuses it)", started)
	}
	// A backend that keeps no connection (the sim) is asked directly.
	h.eng.Drivers = plain
	tgt, _ = h.eng.Target(h.ws(), "api")
	if res, err := tgt.ExecBrokered(ctx, drivers.ExecRequest{Command: "true"}, b); err != nil || res.Via != "sim" ||
		started != 1 {
		t.Errorf("the sim through ExecBrokered: %+v %v (brokers started %d)", res, err, started)
	}
}
