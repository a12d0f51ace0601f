// Package supervisortest stands in for Virtualization.framework in tests
// of the vz supervisor and driver: a Hypervisor that records what it was
// asked to boot and gives back machines a test controls.
package supervisortest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers/vz/supervisor"
	"github.com/sandboxforge/sbf/internal/clock"
)

// Hypervisor is a fake supervisor.Hypervisor. The zero value boots every
// machine it is asked to.
type Hypervisor struct {
	// Deaf machines ignore the ACPI power button.
	Deaf bool

	mu       sync.Mutex
	booted   []supervisor.MachineConfig
	machines []*Machine
	bootErr  error
}

// Boot records m and returns a machine that runs until stopped or ended.
func (h *Hypervisor) Boot(_ context.Context, m supervisor.MachineConfig) (supervisor.Machine, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bootErr != nil {
		return nil, h.bootErr
	}
	fm := &Machine{done: make(chan error, 1), deaf: h.Deaf}
	h.booted = append(h.booted, m)
	h.machines = append(h.machines, fm)
	return fm, nil
}

// FailBoots makes every later Boot fail with err (nil: succeed again).
func (h *Hypervisor) FailBoots(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bootErr = err
}

// Booted is what the hypervisor was asked to boot, in order.
func (h *Hypervisor) Booted() []supervisor.MachineConfig {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]supervisor.MachineConfig(nil), h.booted...)
}

// Last is the machine booted last, nil before any.
func (h *Hypervisor) Last() *Machine {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.machines) == 0 {
		return nil
	}
	return h.machines[len(h.machines)-1]
}

// Machine is a fake supervisor.Machine.
type Machine struct {
	done              chan error
	deaf              bool
	requested, forced atomic.Int32
	once              sync.Once
}

// End stops the machine as the guest would: nil for a power-off, else
// the framework's error.
func (m *Machine) End(err error) { m.once.Do(func() { m.done <- err }) }

// RequestStop counts a press of the power button, which stops the
// machine unless it is deaf.
func (m *Machine) RequestStop() error {
	m.requested.Add(1)
	if !m.deaf {
		m.End(nil)
	}
	return nil
}

// Stop counts a forced stop, which always stops the machine.
func (m *Machine) Stop() error {
	m.forced.Add(1)
	m.End(nil)
	return nil
}

// Done delivers how the machine ended.
func (m *Machine) Done() <-chan error { return m.done }

// Requested is how many times the power button was pressed.
func (m *Machine) Requested() int { return int(m.requested.Load()) }

// Forced is how many times the machine was stopped by force.
func (m *Machine) Forced() int { return int(m.forced.Load()) }

// Eventually polls cond in real time: a supervisor runs in goroutines (or
// processes) of its own.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		clock.Sleep(context.Background(), clock.Real{}, 10*time.Millisecond)
	}
	t.Fatalf("timed out waiting until %s", what)
}

// ShortTempDir is a temporary folder with a short path, so control
// sockets in it fit a sockaddr.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "vz")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Clean(dir)
}
