package vz

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// fakeHypervisor stands in for Virtualization.framework: it records what
// it was asked to boot and gives back machines a test controls.
type fakeHypervisor struct {
	mu       sync.Mutex
	booted   []MachineConfig
	machines []*fakeMachine
	bootErr  error
	// deaf machines ignore the ACPI power button.
	deaf bool
}

func (h *fakeHypervisor) Boot(_ context.Context, m MachineConfig) (Machine, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bootErr != nil {
		return nil, h.bootErr
	}
	fm := &fakeMachine{done: make(chan error, 1), deaf: h.deaf}
	h.booted = append(h.booted, m)
	h.machines = append(h.machines, fm)
	return fm, nil
}

func (h *fakeHypervisor) last() *fakeMachine {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.machines) == 0 {
		return nil
	}
	return h.machines[len(h.machines)-1]
}

type fakeMachine struct {
	done              chan error
	deaf              bool
	requested, forced atomic.Int32
	once              sync.Once
}

func (m *fakeMachine) end(err error) { m.once.Do(func() { m.done <- err }) }

func (m *fakeMachine) RequestStop() error {
	m.requested.Add(1)
	if !m.deaf {
		m.end(nil)
	}
	return nil
}

func (m *fakeMachine) Stop() error {
	m.forced.Add(1)
	m.end(nil)
	return nil
}

func (m *fakeMachine) Done() <-chan error { return m.done }

// writeInstance lays out a complete instance folder without an image.
func writeInstance(t *testing.T, base, name string) folder {
	t.Helper()
	f := folder{base: base, name: name}
	if err := os.MkdirAll(f.dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{diskFile, kernelFile, seedFile, keyFile} {
		if err := os.WriteFile(f.path(n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := translate(drivers.Spec{Name: name, CPUs: 2, MemoryGiB: 1, DiskGiB: 4, VMType: "vz", Arch: "aarch64"}, "root=/dev/vda", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.writeConfig(c); err != nil {
		t.Fatal(err)
	}
	return f
}

// eventually polls cond in real time: the supervisor runs in goroutines
// (or processes) of its own.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting until %s", what)
}

func statusOf(f folder) Status {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := ask(ctx, f.socket(), request{Op: "status"})
	if err != nil {
		return Status{State: "unreachable: " + err.Error()}
	}
	return st
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, os.ErrNotExist)
}

func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "vz")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Clean(dir)
}
