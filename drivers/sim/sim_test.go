package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

func newSim(t *testing.T, dir, faults string) *Driver {
	t.Helper()
	d, err := New(Options{Dir: dir, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLifecycleAndLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := newSim(t, dir, "")
	spec := drivers.Spec{Name: "sbf-01234567-api", CPUs: 2, MemoryGiB: 4, DiskGiB: 20}
	if err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := d.Create(ctx, spec); err == nil {
		t.Error("creating an existing instance succeeded")
	}
	if err := d.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	spec.CPUs = 4
	if err := d.Reconfigure(ctx, spec); err == nil {
		t.Error("reconfiguring a running instance succeeded")
	}
	d.Stop(ctx, spec.Name)
	if err := d.Reconfigure(ctx, spec); err != nil {
		t.Fatal(err)
	}
	// Another process sees the same world.
	list, err := newSim(t, dir, "").List(ctx)
	if err != nil || len(list) != 1 || list[0].Status != drivers.Stopped || list[0].Reported.CPUs != 4 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if err := d.Delete(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, spec.Name); !errors.Is(err, drivers.ErrNotFound) {
		t.Errorf("deleting a missing instance: %v, want ErrNotFound", err)
	}
	if err := d.Start(ctx, drivers.Spec{Name: "sbf-01234567-nope"}); !errors.Is(err, drivers.ErrNotFound) {
		t.Errorf("starting a missing instance: %v", err)
	}
	ops, err := ReadLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range ops {
		names = append(names, o.Op)
	}
	want := "create create start reconfigure stop reconfigure list delete delete start"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("log = %s\nwant  %s", got, want)
	}
}

func TestCountedFaultsAreSharedAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spec := drivers.Spec{Name: "sbf-01234567-api"}
	for i := 0; i < 2; i++ {
		// A fresh Driver per attempt stands for a fresh sbf process.
		if err := newSim(t, dir, "create:api=fail:2").Create(ctx, spec); err == nil ||
			!strings.Contains(err.Error(), "injected") {
			t.Fatalf("attempt %d: err = %v, want an injected failure", i+1, err)
		}
	}
	if err := newSim(t, dir, "create:api=fail:2").Create(ctx, spec); err != nil {
		t.Fatalf("third attempt: %v", err)
	}
	always := newSim(t, dir, "delete:*=fail")
	for i := 0; i < 3; i++ {
		if err := always.Delete(ctx, spec.Name); err == nil {
			t.Fatal("an always-failing rule let delete through")
		}
	}
	if err := newSim(t, dir, "stop:web=fail").Stop(ctx, spec.Name); err != nil {
		t.Errorf("a rule for another sandbox fired: %v", err)
	}
}

func TestLatency(t *testing.T) {
	d, err := New(Options{Dir: t.TempDir(), Latency: "list=50ms"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d.List(context.Background())
	if time.Since(start) < 50*time.Millisecond {
		t.Error("list returned before its latency")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.List(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait returned %v", err)
	}
}

func TestMalformedSettings(t *testing.T) {
	for _, o := range []Options{
		{Latency: "create"}, {Latency: "boot=1s"}, {Latency: "create=-1s"},
		{Faults: "create=fail"}, {Faults: "create:api=explode"}, {Faults: "create:api=fail:0"}, {Faults: "nuke:*=fail"},
	} {
		o.Dir = t.TempDir()
		if _, err := New(o); err == nil {
			t.Errorf("%+v was accepted", o)
		}
	}
}
