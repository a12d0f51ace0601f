// Package sandboxtest makes data-plane targets for tests without the
// engine: a workspace with a spec, its sandbox's VM running on the sim
// driver, and a fake clock.
package sandboxtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// T0 is every test's "now".
var T0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// Sandbox is one running sandbox of a test workspace.
type Sandbox struct {
	Root     string
	Name     string
	Clock    *clock.Fake
	Driver   drivers.Driver
	Resolved *spec.Resolved
	// Record is what the state file would hold for the sandbox.
	Record *state.Sandbox
	// Getenv is the process environment targets see.
	Getenv func(string) string
}

// New writes specText to a new workspace, loads it and boots the named
// sandbox's VM on the sim (its world below the workspace's world/).
func New(t testing.TB, specText, name string) *Sandbox {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, spec.FileName), []byte(specText), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := spec.Load(spec.Options{Root: root, Host: spec.Host{OS: "linux", Arch: "amd64"}, Backends: drivers.Linked})
	if err != nil {
		t.Fatal(err)
	}
	c := clock.NewFake(T0)
	d, err := sim.New(sim.Options{Dir: filepath.Join(root, "world"), Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	vm := drivers.Spec{Name: drivers.InstanceName(r.WorkspaceID, name), CPUs: 1, MemoryGiB: 1, DiskGiB: 10}
	ctx := context.Background()
	if err := d.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, vm); err != nil {
		t.Fatal(err)
	}
	return &Sandbox{Root: r.Root, Name: name, Clock: c, Driver: d, Resolved: r,
		Getenv: func(string) string { return "" }}
}

// Instance is the sandbox's VM.
func (s *Sandbox) Instance() string { return drivers.InstanceName(s.Resolved.WorkspaceID, s.Name) }

// Target is the sandbox as the engine would hand it to the data plane.
func (s *Sandbox) Target() *sandbox.Target {
	return &sandbox.Target{Resolved: s.Resolved, Sandbox: s.Name, Instance: s.Instance(), DriverName: sim.Name,
		Record: s.Record, Clock: s.Clock, Getenv: s.Getenv, Open: func() (drivers.Driver, error) { return s.Driver, nil }}
}
