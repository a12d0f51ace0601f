package vz

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

type running struct {
	f     folder
	hv    *fakeHypervisor
	clock *clock.Fake
	done  chan error
	stop  context.CancelFunc
}

func startSupervisor(t *testing.T, hv *fakeHypervisor) *running {
	t.Helper()
	f := writeInstance(t, shortTempDir(t), "sbf-0123abcd-api")
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{f: f, hv: hv, clock: clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)), done: make(chan error, 1), stop: cancel}
	go func() { r.done <- runSupervisor(ctx, f.dir(), hv, r.clock) }()
	t.Cleanup(func() {
		cancel()
		if m := hv.last(); m != nil {
			m.end(nil)
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

func TestSupervisorBootsTheFoldersMachineAndStopsItCleanly(t *testing.T) {
	r := startSupervisor(t, &fakeHypervisor{})
	eventually(t, "running", func() bool { return statusOf(r.f).State == stateRunning })
	c, _ := r.f.readConfig()
	want, _ := machine(r.f, c)
	if !reflect.DeepEqual(r.hv.booted, []MachineConfig{want}) {
		t.Errorf("booted %+v, want %+v", r.hv.booted, want)
	}
	if st := statusOf(r.f); st.PID != os.Getpid() || st.MAC != c.MAC {
		t.Errorf("status %+v", st)
	}
	if pid, _ := os.ReadFile(r.f.path(pidFile)); strings.TrimSpace(string(pid)) == "" {
		t.Error("no pid file while running")
	}
	st, err := ask(context.Background(), r.f.socket(), request{Op: "stop"})
	if err != nil || st.State != stateStopped {
		t.Fatalf("stop = %+v, %v", st, err)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("supervisor: %v", err)
	}
	m := r.hv.last()
	if m.requested.Load() != 1 || m.forced.Load() != 0 {
		t.Errorf("power button %d times, forced %d times", m.requested.Load(), m.forced.Load())
	}
	for _, gone := range []string{r.f.socket(), r.f.path(pidFile), r.f.path(failureFile)} {
		if fileExists(gone) {
			t.Errorf("%s left behind", gone)
		}
	}
}

func TestSupervisorForcesAStopTheGuestIgnores(t *testing.T) {
	r := startSupervisor(t, &fakeHypervisor{deaf: true})
	eventually(t, "running", func() bool { return statusOf(r.f).State == stateRunning })
	go ask(context.Background(), r.f.socket(), request{Op: "stop", TimeoutMS: 5000})
	eventually(t, "the stop to wait", func() bool { return r.clock.Waiters() > 0 })
	if m := r.hv.last(); m.requested.Load() != 1 || m.forced.Load() != 0 {
		t.Fatalf("forced before the timeout: %d", m.forced.Load())
	}
	r.clock.Advance(5 * time.Second)
	if err := r.wait(t); err != nil {
		t.Errorf("supervisor: %v", err)
	}
	if m := r.hv.last(); m.forced.Load() != 1 {
		t.Errorf("forced %d times", m.forced.Load())
	}
}

func TestSupervisorStopsCleanlyWhenCancelled(t *testing.T) {
	r := startSupervisor(t, &fakeHypervisor{})
	eventually(t, "running", func() bool { return statusOf(r.f).State == stateRunning })
	r.stop() // SIGTERM to sbf vz-run
	if err := r.wait(t); err != nil {
		t.Errorf("supervisor: %v", err)
	}
	if m := r.hv.last(); m.requested.Load() != 1 {
		t.Errorf("power button %d times", m.requested.Load())
	}
}

func TestSupervisorEndsWithTheGuest(t *testing.T) {
	r := startSupervisor(t, &fakeHypervisor{})
	eventually(t, "running", func() bool { return statusOf(r.f).State == stateRunning })
	r.hv.last().end(nil) // `poweroff` in the guest
	if err := r.wait(t); err != nil {
		t.Errorf("supervisor: %v", err)
	}
	if fileExists(r.f.socket()) {
		t.Error("socket left behind")
	}
}

func TestSupervisorRecordsWhyTheMachineFailed(t *testing.T) {
	r := startSupervisor(t, &fakeHypervisor{})
	eventually(t, "running", func() bool { return statusOf(r.f).State == stateRunning })
	r.hv.last().end(errors.New("the virtual machine stopped with an error"))
	if err := r.wait(t); err == nil {
		t.Error("a failed machine ended the supervisor without an error")
	}
	if b, _ := os.ReadFile(r.f.path(failureFile)); !strings.Contains(string(b), "stopped with an error") {
		t.Errorf("failure file: %q", b)
	}
}

func TestSupervisorReportsABootFailure(t *testing.T) {
	r := startSupervisor(t, &fakeHypervisor{bootErr: errors.New("VZErrorDomain: invalid kernel")})
	err := r.wait(t)
	if err == nil || !strings.Contains(err.Error(), "invalid kernel") {
		t.Errorf("err = %v", err)
	}
	if b, _ := os.ReadFile(r.f.path(failureFile)); !strings.Contains(string(b), "invalid kernel") {
		t.Errorf("failure file: %q", b)
	}
}

func TestOneSupervisorPerInstance(t *testing.T) {
	r := startSupervisor(t, &fakeHypervisor{})
	eventually(t, "running", func() bool { return statusOf(r.f).State == stateRunning })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := runSupervisor(ctx, r.f.dir(), &fakeHypervisor{}, r.clock)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second supervisor: %v", err)
	}
	if statusOf(r.f).State != stateRunning {
		t.Error("the second supervisor disturbed the first")
	}
}

func TestRunSupervisorWithoutTheFramework(t *testing.T) {
	if framework != nil {
		t.Skip("this build has Virtualization.framework")
	}
	if err := RunSupervisor(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "macOS") && !strings.Contains(err.Error(), "cgo") {
		t.Errorf("err = %v", err)
	}
}
