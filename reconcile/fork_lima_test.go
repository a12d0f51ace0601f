package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/lima"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Lima cannot fork from memory in this build: a fork of a running Lima
// sandbox is FORK_UNSUPPORTED naming a clone from a disk snapshot, decided
// before limactl is asked anything, so nothing is stopped, copied or booted
// in its place (the fake limactl logs every call).
func TestAForkOnLimaIsRefusedBeforeLimactlIsAsked(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"lima\"\n[sandboxes.api]\n")
	fake := t.TempDir()
	t.Setenv("FAKE_LIMA_DIR", fake)
	limactl, _ := filepath.Abs("../drivers/lima/testdata/fake-limactl")
	drv, err := lima.New(context.Background(), lima.Options{Limactl: limactl, HostOS: "linux", HostArch: "amd64",
		Euid: func() int { return 1000 }, Getenv: func(string) string { return "" }, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h.eng.Drivers = func(name string, _ *spec.Resolved) (Driver, error) {
		if name != "lima" {
			return nil, &drivers.UnavailableError{Driver: name, Reason: "not in this test"}
		}
		return drv, nil
	}
	// api holds a lease and runs, as sbf recorded it.
	r, err := h.eng.Load(h.ws())
	if err != nil {
		t.Fatal(err)
	}
	err = spec.EditManaged(context.Background(), r, h.eng.holder(), func(m *spec.Managed) error {
		m.SetLease("api", spec.LeaseRecord{AcquiredAt: t0, ExpiresAt: t0.Add(time.Hour)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(context.Background(), filepath.Join(h.root, spec.Dir), r.Root, r.WorkspaceID,
		h.eng.holder(), 0)
	if err != nil {
		t.Fatal(err)
	}
	store.Write(func(tx *state.Tx) {
		rec := tx.Sandbox("api")
		rec.Driver, rec.Instance, rec.Phase = "lima", h.instance("api"), state.Running
	})
	store.Close()
	before, _ := os.ReadFile(filepath.Join(fake, "argv.log"))

	_, err = h.fork(ForkRequest{Source: "api", Count: 2, Audit: &Audit{Door: "cli", Tool: "fork"}})
	c := coded.Of(err, "")
	if c == nil || c.Code != coded.ForkUnsupported || c.Details["driver"] != "lima" ||
		!strings.Contains(c.Message, "sbf snapshot create api NAME") {
		t.Fatalf("a fork on lima: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(fake, "argv.log")); string(after) != string(before) {
		t.Errorf("the refused fork ran limactl: %s", strings.TrimPrefix(string(after), string(before)))
	}
	h.knowsOnly(t, "api")
}
