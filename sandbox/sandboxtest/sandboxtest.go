// Package sandboxtest makes data-plane targets for tests without the
// engine: a workspace with a spec, its sandbox's VM running on the one
// test-only backend linked (the sim), and a fake clock.
package sandboxtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	_ "github.com/sandboxforge/sbf/drivers/all" // the backends, the test-only one among them
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
	Backend  string // the test-only backend the VM runs on
	Clock    *clock.Fake
	Driver   drivers.Driver
	Resolved *spec.Resolved
	// Record is what the state file would hold for the sandbox.
	Record *state.Sandbox
	// Getenv is the process environment targets see.
	Getenv func(string) string
}

// New writes specText to a new workspace, loads it and boots the named
// sandbox's VM on the test-only backend (its world below the workspace's
// world/).
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
	backend, d := testBackend(t, r.Root, c)
	vm := drivers.Spec{Name: drivers.InstanceName(r.WorkspaceID, name), CPUs: 1, MemoryGiB: 1, DiskGiB: 10}
	if err := d.Create(t.Context(), vm); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context(), vm); err != nil {
		t.Fatal(err)
	}
	return &Sandbox{Root: r.Root, Name: name, Backend: backend, Clock: c, Driver: d, Resolved: r,
		Getenv: func(string) string { return "" }}
}

// testBackend builds the one test-only backend linked (drivers.Registration.TestOnly)
// as the engine would, its commands allowed on this host (as SBF_ENABLE_SIM=1
// allows them) and its world below root's world/.
func testBackend(t testing.TB, root string, c clock.Clock) (string, drivers.Driver) {
	t.Helper()
	var testOnly []drivers.Registration
	for _, name := range drivers.Names() {
		if reg, _ := drivers.Lookup(name); reg.TestOnly {
			testOnly = append(testOnly, reg)
		}
	}
	if len(testOnly) != 1 {
		t.Fatalf("sandboxtest runs its VMs on the one test-only backend linked; %d are", len(testOnly))
	}
	d, err := testOnly[0].New(t.Context(), drivers.Env{Getenv: func(string) string { return "" }, Clock: c,
		StateDir: filepath.Join(root, "world"), Workspace: root, HostOS: runtime.GOOS, HostArch: runtime.GOARCH,
		HostExec: true})
	if err != nil {
		t.Fatal(err)
	}
	return testOnly[0].Name, d
}

// Instance is the sandbox's VM.
func (s *Sandbox) Instance() string { return drivers.InstanceName(s.Resolved.WorkspaceID, s.Name) }

// Target is the sandbox as the engine would hand it to the data plane.
func (s *Sandbox) Target() *sandbox.Target {
	return &sandbox.Target{Resolved: s.Resolved, Sandbox: s.Name, Instance: s.Instance(), DriverName: s.Backend,
		Record: s.Record, Clock: s.Clock, Getenv: s.Getenv, Open: func() (drivers.Driver, error) { return s.Driver, nil }}
}
