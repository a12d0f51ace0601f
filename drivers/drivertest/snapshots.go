package drivertest

import (
	"context"
	"errors"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// snapshots: a backend that keeps snapshots (drivers.Snapshotter) lists
// what it took, refuses a name twice, says ErrSnapshotNotFound for one it
// does not have, and forgets an instance's snapshots with the instance.
func snapshots(t *testing.T, h Harness) {
	ctx := context.Background()
	d := h.New(t).Driver
	sn := drivers.CapabilitiesOf(d).Snapshots
	if sn == nil {
		t.Skip("this backend keeps no snapshots")
	}
	a := h.Spec(Primary)
	must(t, "Create", d.Create(ctx, a))
	must(t, "Start", d.Start(ctx, a))
	_, err := sn.Snapshot(ctx, Primary, "first")
	must(t, "Snapshot", err)
	if _, err := sn.Snapshot(ctx, Primary, "first"); err == nil {
		t.Error("a second snapshot of one name succeeded; the engine relies on the refusal")
	}
	_, err = sn.Snapshot(ctx, Primary, "second")
	must(t, "Snapshot", err)
	names := func() []string {
		list, err := sn.ListSnapshots(ctx, Primary)
		must(t, "ListSnapshots", err)
		var out []string
		for _, s := range list {
			out = append(out, s.Name)
		}
		return out
	}
	if got := names(); len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Errorf("ListSnapshots: %v; want [first second]", got)
	}
	must(t, "RestoreSnapshot", sn.RestoreSnapshot(ctx, Primary, "first"))
	must(t, "DeleteSnapshot", sn.DeleteSnapshot(ctx, Primary, "first"))
	for what, err := range map[string]error{"DeleteSnapshot": sn.DeleteSnapshot(ctx, Primary, "first"),
		"RestoreSnapshot": sn.RestoreSnapshot(ctx, Primary, "first")} {
		if !errors.Is(err, drivers.ErrSnapshotNotFound) {
			t.Errorf("%s of a deleted snapshot: %v (want an error wrapping drivers.ErrSnapshotNotFound)", what, err)
		}
	}
	must(t, "Stop", d.Stop(ctx, Primary))
	must(t, "Delete", d.Delete(ctx, Primary))
	must(t, "Create again", d.Create(ctx, a))
	if got := names(); len(got) != 0 {
		t.Errorf("a new instance of a deleted one's name has its snapshots: %v", got)
	}
}

// clones: a backend that clones (drivers.Cloner) makes the new instance
// stopped and as its spec says, leaves the source as it was, and refuses
// a name that exists.
func clones(t *testing.T, h Harness) {
	ctx := context.Background()
	d := h.New(t).Driver
	cl := drivers.CapabilitiesOf(d).Clone
	if cl == nil {
		t.Skip("this backend makes no clones")
	}
	a, b := h.Spec(Primary), h.Grow(h.Spec(Secondary))
	must(t, "Create", d.Create(ctx, a))
	must(t, "Start", d.Start(ctx, a))
	must(t, "Clone", cl.Clone(ctx, a, "", b))
	expect(t, d, a, drivers.Running)
	expect(t, d, b, drivers.Stopped)
	if l := listed(t, d)[Secondary].Label; l != nil {
		t.Errorf("the clone carries a label: %+v", l)
	}
	must(t, "Start the clone", d.Start(ctx, b))
	if err := cl.Clone(ctx, a, "", b); err == nil {
		t.Error("Clone onto an existing instance succeeded")
	}
	expect(t, d, b, drivers.Running)
	must(t, "Delete the source", d.Delete(ctx, Primary))
	expect(t, d, b, drivers.Running)
}
