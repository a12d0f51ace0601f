//go:build unix

package vz

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/vz/supervisor/supervisortest"
)

// TestACrashedSupervisorMeansStopped runs the supervisor as a real
// detached process (the test binary, through CommandStarter) and kills
// it: the VM went with it, so the instance is stopped, and starts again.
func TestACrashedSupervisorMeansStopped(t *testing.T) {
	w := newWorld(t)
	t.Setenv("SBF_VZ_TEST_SUPERVISOR", "1")
	exe, _ := os.Executable()
	inProcess := w.d.opts.StartSupervisor
	w.d.opts.StartSupervisor = func(dir string) error {
		inProcess(dir) // for the lease, then stops at once
		w.shutdown()
		return CommandStarter(exe, "-test.run=^$")(dir)
	}
	ctx := context.Background()
	s := testSpec("api")
	if err := w.d.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := w.d.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
	f := w.d.folder(s.Name)
	st, err := w.d.status(ctx, f)
	if err != nil || st.PID == os.Getpid() || listed(t, w.d)[s.Name].Status != drivers.Running {
		t.Fatalf("not supervised by another process: %+v, %v", st, err)
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	supervisortest.Eventually(t, "the instance reads stopped", func() bool {
		return listed(t, w.d)[s.Name].Status == drivers.Stopped
	})
	if _, err := os.Stat(f.Socket()); err != nil {
		t.Log("the crashed supervisor's socket is gone; the test shows less than it should")
	}
	if err := w.d.Start(ctx, s); err != nil {
		t.Fatalf("restart after a crash: %v", err)
	}
	if err := w.d.Delete(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
}
