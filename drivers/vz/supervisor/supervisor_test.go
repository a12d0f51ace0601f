package supervisor_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
	"github.com/sandboxforge/sbf/drivers/vz/supervisor"
	"github.com/sandboxforge/sbf/drivers/vz/supervisor/supervisortest"
	"github.com/sandboxforge/sbf/internal/clock"
)

type running struct {
	f     layout.Folder
	hv    *supervisortest.Hypervisor
	clock *clock.Fake
	done  chan error
	stop  context.CancelFunc
}

func startSupervisor(t *testing.T, hv *supervisortest.Hypervisor) *running {
	t.Helper()
	f := writeInstance(t, supervisortest.ShortTempDir(t), "sbf-0123abcd-api")
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{f: f, hv: hv, clock: clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)),
		done: make(chan error, 1), stop: cancel}
	go func() { r.done <- supervisor.RunWith(ctx, f.Dir(), hv, r.clock) }()
	t.Cleanup(func() {
		cancel()
		if m := hv.Last(); m != nil {
			m.End(nil)
		}
		<-r.done
	})
	return r
}

func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor did not end")
		return nil
	}
}

// writeInstance lays out a complete instance folder without an image.
func writeInstance(t *testing.T, base, name string) layout.Folder {
	t.Helper()
	f := layout.Folder{Base: base, Name: name}
	if err := os.MkdirAll(f.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{layout.DiskFile, layout.KernelFile, layout.SeedFile, layout.KeyFile} {
		if err := os.WriteFile(f.Path(n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := layout.Config{Spec: drivers.Spec{Name: name, CPUs: 2, MemoryGiB: 1, DiskGiB: 4, VMType: "vz", Arch: "aarch64"},
		CPUs: 2, MemoryBytes: 1 << 30, CmdLine: "root=/dev/vda console=hvc0", MAC: "02:00:00:12:34:56", User: "sbf"}
	if err := f.WriteConfig(c); err != nil {
		t.Fatal(err)
	}
	return f
}

func statusOf(f layout.Folder) supervisor.Status {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := supervisor.Query(ctx, f.Socket())
	if err != nil {
		return supervisor.Status{State: "unreachable: " + err.Error()}
	}
	return st
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, os.ErrNotExist)
}

func isRunning(r *running) func() bool {
	return func() bool { return statusOf(r.f).State == supervisor.StateRunning }
}

func TestSupervisorBootsTheFoldersMachineAndStopsItCleanly(t *testing.T) {
	r := startSupervisor(t, &supervisortest.Hypervisor{})
	supervisortest.Eventually(t, "running", isRunning(r))
	c, _ := r.f.ReadConfig()
	want, _ := supervisor.MachineFor(r.f, c)
	if booted := r.hv.Booted(); !reflect.DeepEqual(booted, []supervisor.MachineConfig{want}) {
		t.Errorf("booted %+v, want %+v", booted, want)
	}
	if st := statusOf(r.f); st.PID != os.Getpid() || st.MAC != c.MAC {
		t.Errorf("status %+v", st)
	}
	if pid, _ := os.ReadFile(r.f.Path(layout.PIDFile)); strings.TrimSpace(string(pid)) == "" {
		t.Error("no pid file while running")
	}
	st, err := supervisor.Stop(context.Background(), r.f.Socket(), false, 0)
	if err != nil || st.State != supervisor.StateStopped {
		t.Fatalf("stop = %+v, %v", st, err)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("supervisor: %v", err)
	}
	m := r.hv.Last()
	if m.Requested() != 1 || m.Forced() != 0 {
		t.Errorf("power button %d times, forced %d times", m.Requested(), m.Forced())
	}
	for _, gone := range []string{r.f.Socket(), r.f.Path(layout.PIDFile), r.f.Path(layout.FailureFile)} {
		if fileExists(gone) {
			t.Errorf("%s left behind", gone)
		}
	}
}

func TestSupervisorForcesAStopTheGuestIgnores(t *testing.T) {
	r := startSupervisor(t, &supervisortest.Hypervisor{Deaf: true})
	supervisortest.Eventually(t, "running", isRunning(r))
	go supervisor.Stop(context.Background(), r.f.Socket(), false, 5*time.Second)
	supervisortest.Eventually(t, "the stop to wait", func() bool { return r.clock.Waiters() > 0 })
	if m := r.hv.Last(); m.Requested() != 1 || m.Forced() != 0 {
		t.Fatalf("forced before the timeout: %d", m.Forced())
	}
	r.clock.Advance(5 * time.Second)
	if err := r.wait(t); err != nil {
		t.Errorf("supervisor: %v", err)
	}
	if m := r.hv.Last(); m.Forced() != 1 {
		t.Errorf("forced %d times", m.Forced())
	}
}

func TestSupervisorStopsCleanlyWhenCancelled(t *testing.T) {
	r := startSupervisor(t, &supervisortest.Hypervisor{})
	supervisortest.Eventually(t, "running", isRunning(r))
	r.stop() // SIGTERM to sbf vz-run
	if err := r.wait(t); err != nil {
		t.Errorf("supervisor: %v", err)
	}
	if m := r.hv.Last(); m.Requested() != 1 {
		t.Errorf("power button %d times", m.Requested())
	}
}

func TestSupervisorEndsWithTheGuest(t *testing.T) {
	r := startSupervisor(t, &supervisortest.Hypervisor{})
	supervisortest.Eventually(t, "running", isRunning(r))
	r.hv.Last().End(nil) // `poweroff` in the guest
	if err := r.wait(t); err != nil {
		t.Errorf("supervisor: %v", err)
	}
	if fileExists(r.f.Socket()) {
		t.Error("socket left behind")
	}
}

func TestSupervisorRecordsWhyTheMachineFailed(t *testing.T) {
	r := startSupervisor(t, &supervisortest.Hypervisor{})
	supervisortest.Eventually(t, "running", isRunning(r))
	r.hv.Last().End(errors.New("the virtual machine stopped with an error"))
	if err := r.wait(t); err == nil {
		t.Error("a failed machine ended the supervisor without an error")
	}
	if b, _ := os.ReadFile(r.f.Path(layout.FailureFile)); !strings.Contains(string(b), "stopped with an error") {
		t.Errorf("failure file: %q", b)
	}
}

func TestSupervisorReportsABootFailure(t *testing.T) {
	hv := &supervisortest.Hypervisor{}
	hv.FailBoots(errors.New("VZErrorDomain: invalid kernel"))
	r := startSupervisor(t, hv)
	err := r.wait(t)
	if err == nil || !strings.Contains(err.Error(), "invalid kernel") {
		t.Errorf("err = %v", err)
	}
	if b, _ := os.ReadFile(r.f.Path(layout.FailureFile)); !strings.Contains(string(b), "invalid kernel") {
		t.Errorf("failure file: %q", b)
	}
}

func TestOneSupervisorPerInstance(t *testing.T) {
	r := startSupervisor(t, &supervisortest.Hypervisor{})
	supervisortest.Eventually(t, "running", isRunning(r))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := supervisor.RunWith(ctx, r.f.Dir(), &supervisortest.Hypervisor{}, r.clock)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second supervisor: %v", err)
	}
	if statusOf(r.f).State != supervisor.StateRunning {
		t.Error("the second supervisor disturbed the first")
	}
}

func TestRunWithoutTheFramework(t *testing.T) {
	why := supervisor.Unavailable()
	if why == "" {
		t.Skip("this build has Virtualization.framework")
	}
	err := supervisor.Run(context.Background(), t.TempDir())
	if err == nil || err.Error() != why || !strings.Contains(why, "macOS") && !strings.Contains(why, "cgo") {
		t.Errorf("err = %v", err)
	}
}
