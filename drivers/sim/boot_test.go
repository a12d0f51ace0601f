package sim

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// heldSim is a world whose starts of the sandbox api stay booting until
// the test ends the boot.
func heldSim(t *testing.T) (*Driver, drivers.Spec) {
	d, err := New(Options{Dir: t.TempDir(), Boot: "api=hold"})
	if err != nil {
		t.Fatal(err)
	}
	s := drivers.Spec{Name: "sbf-01234567-api", CPUs: 2, MemoryGiB: 4, DiskGiB: 20}
	if err := d.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return d, s
}

// cutShort starts the instance and stops waiting once the start says it
// waits for the boot: the boot goes on.
func cutShort(t *testing.T, d *Driver, s drivers.Spec) string {
	ctx, cancel := context.WithCancel(context.Background())
	said := ""
	ctx = drivers.WithProgress(ctx, func(msg string) { said = msg; cancel() })
	if err := d.Start(ctx, s); !errors.Is(err, context.Canceled) {
		t.Fatalf("a start cut short: %v", err)
	}
	return said
}

func TestAHeldBootLeavesTheInstanceBootingUntilItEnds(t *testing.T) {
	d, s := heldSim(t)
	if said := cutShort(t, d, s); !strings.Contains(said, "is still booting") {
		t.Errorf("the start said %q", said)
	}
	list, _ := d.List(context.Background())
	if len(list) != 1 || list[0].Status != drivers.Booting || list[0].BootStep == "" || list[0].Created.IsZero() {
		t.Fatalf("listed: %+v", list)
	}
	if _, err := d.Exec(context.Background(), s.Name, drivers.ExecRequest{Command: "true"}); !errors.Is(err,
		drivers.ErrBooting) {
		t.Errorf("exec in a booting instance: %v", err)
	}
	// A later start waits for the boot that goes on, rather than starting anew.
	done := make(chan error, 1)
	said := make(chan string, 4)
	go func() {
		done <- d.Start(drivers.WithProgress(context.Background(), func(m string) { said <- m }), s)
	}()
	<-said
	if err := d.FinishBoot(s.Name); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if list, _ := d.List(context.Background()); list[0].Status != drivers.Running {
		t.Errorf("after the boot: %+v", list[0])
	}
}

// A clean stop waits for the boot; a forced stop and a delete do not.
func TestOnlyACleanStopWaitsForTheBoot(t *testing.T) {
	d, s := heldSim(t)
	cutShort(t, d, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Stop(ctx, s.Name); !errors.Is(err, context.Canceled) {
		t.Errorf("a clean stop of a booting instance did not wait: %v", err)
	}
	if err := d.ForceStop(context.Background(), s.Name); err != nil {
		t.Fatal(err)
	}
	if list, _ := d.List(context.Background()); list[0].Status != drivers.Stopped {
		t.Errorf("after a forced stop: %+v", list[0])
	}
	cutShort(t, d, s)
	if err := d.Delete(context.Background(), s.Name); err != nil {
		t.Fatal(err)
	}
}
