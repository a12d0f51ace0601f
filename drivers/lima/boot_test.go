package lima

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
)

// clockedHomeFake is homeFake with a fake clock for the driver's waits.
func clockedHomeFake(t *testing.T) (*fake, *Driver, string, *clock.Fake) {
	f, _, home := homeFake(t)
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	o := f.options()
	o.Clock = fake
	d, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return f, d, home, fake
}

// startHeld boots an instance whose boot the test ends itself (a start
// cut short leaves one so: QEMU and Lima's host agent go on booting).
func startHeld(t *testing.T, f *fake, d *Driver, home string) drivers.Spec {
	s := qemuNamed(instance)
	if err := d.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.dir, "hold-boot"), nil, 0o644)
	// The start is cut short once it waits for the boot: sbf stops
	// waiting, the boot goes on.
	ctx, cancel := context.WithCancel(context.Background())
	ctx = drivers.WithProgress(ctx, func(msg string) {
		if strings.Contains(msg, "still booting") {
			cancel()
		}
	})
	if err := d.Start(ctx, s); !errors.Is(err, context.Canceled) {
		t.Fatalf("a start cut short: %v", err)
	}
	return s
}

// finishBoot is the host agent's event that ends a boot.
func finishBoot(t *testing.T, home string) {
	f, err := os.OpenFile(filepath.Join(home, instance, "ha.stdout.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(`{"status":{"running":true,"sshLocalPort":60022}}` + "\n")
}

func listed(t *testing.T, d *Driver) drivers.Instance {
	t.Helper()
	list, err := d.List(context.Background())
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
	return list[0]
}

// limactl lists an instance Running from the moment its host agent runs;
// until the agent says the boot is over it is booting, with what it waits
// for, and its creation time is the one Lima wrote at create.
func TestAHalfBootedInstanceIsListedBooting(t *testing.T) {
	f, d, home, _ := clockedHomeFake(t)
	startHeld(t, f, d, home)
	inst := listed(t, d)
	if inst.Status != drivers.Booting || inst.BootStep != `Waiting for the essential requirement 1 of 2: "ssh"` {
		t.Errorf("a half-booted instance: %+v", inst)
	}
	info, _ := os.Stat(filepath.Join(home, instance, "lima-version"))
	if info == nil || !inst.Created.Equal(info.ModTime()) {
		t.Errorf("created %v, want lima-version's time", inst.Created)
	}
	finishBoot(t, home)
	if inst := listed(t, d); inst.Status != drivers.Running || inst.BootStep != "" {
		t.Errorf("after the boot: %+v", inst)
	}
}

// Commands do not go to a booting instance (its sshd may not answer, its
// user may lack the groups the boot gives), and limactl shell is not
// tried either: the error says it boots.
func TestExecToABootingInstanceSaysItBoots(t *testing.T) {
	f, d, home, _ := clockedHomeFake(t)
	startHeld(t, f, d, home)
	_, err := d.Exec(context.Background(), instance, drivers.ExecRequest{Command: "true"})
	if !errors.Is(err, drivers.ErrBooting) || !strings.Contains(err.Error(), `"ssh"`) {
		t.Errorf("exec to a booting instance: %v", err)
	}
	if slices.ContainsFunc(f.argv(), func(a string) bool { return strings.Contains(a, " shell ") }) {
		t.Errorf("limactl shell was tried: %v", f.argv())
	}
}

// `limactl start` of an instance that runs returns at once, booted or
// not; Start waits until the boot a start cut short began is over, saying
// what it waits for.
func TestStartFinishesTheBootAStartCutShortBegan(t *testing.T) {
	f, d, home, fake := clockedHomeFake(t)
	s := startHeld(t, f, d, home)
	said := make(chan string, 16)
	ctx := drivers.WithProgress(context.Background(), func(msg string) { said <- msg })
	done := make(chan error, 1)
	go func() { done <- d.Start(ctx, s) }()
	select {
	case err := <-done:
		t.Fatalf("Start returned while the instance was booting: %v", err)
	case msg := <-said:
		if !strings.Contains(msg, instance+` is still booting: Waiting for the essential requirement`) {
			t.Errorf("progress: %q", msg)
		}
	}
	finishBoot(t, home)
	for {
		fake.Advance(bootPoll)
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A fork's child whose memory is in is running, not booting, while Lima's
// own checks go on (limactl start still waits for them); the next start of
// the instance boots it, so it is booting again until Lima says otherwise.
func TestARestoredChildRunsWhileLimaStillChecksIt(t *testing.T) {
	f, d, home, _ := clockedHomeFake(t)
	s := startHeld(t, f, d, home)
	os.WriteFile(filepath.Join(home, instance, forkRestored), nil, 0o600)
	if inst := listed(t, d); inst.Status != drivers.Running {
		t.Errorf("a restored child: %+v; want running", inst)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = drivers.WithProgress(ctx, func(msg string) {
		if strings.Contains(msg, "still booting") {
			cancel()
		}
	})
	if err := d.Start(ctx, s); !errors.Is(err, context.Canceled) {
		t.Fatalf("a start of the stopped child, cut short: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, instance, forkRestored)); !os.IsNotExist(err) {
		t.Errorf("a start kept the restored mark: %v", err)
	}
	if inst := listed(t, d); inst.Status != drivers.Booting {
		t.Errorf("a child started again: %+v; want booting", inst)
	}
}
