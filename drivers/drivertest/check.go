package drivertest

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// gone accepts what the engine accepts for an instance already gone.
func gone(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, drivers.ErrNotFound) {
		t.Errorf("%s: %v (want success or an error wrapping drivers.ErrNotFound)", what, err)
	}
}

// listed is List's answer by name, checked for what every answer must be.
func listed(t *testing.T, d drivers.Driver) map[string]drivers.Instance {
	t.Helper()
	list, err := d.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	out := map[string]drivers.Instance{}
	for _, inst := range list {
		if !drivers.ManagedName(inst.Name) && inst.Label == nil {
			t.Errorf("List reports %q, which is not a name sbf makes and carries no label of sbf's", inst.Name)
		}
		if _, dup := out[inst.Name]; dup {
			t.Errorf("List reports %s twice", inst.Name)
		}
		out[inst.Name] = inst
	}
	inspected(t, d, out)
	return out
}

// inspected checks that a backend that looks instances up (Inspector)
// says of each what List says, and leaves out a name it does not hold.
func inspected(t *testing.T, d drivers.Driver, listed map[string]drivers.Instance) {
	t.Helper()
	in := drivers.CapabilitiesOf(d).Inspect
	if in == nil {
		return
	}
	names := append(slices.Sorted(maps.Keys(listed)), drivers.InstanceName("ffffffff", "never-made"))
	got, err := in.Inspect(context.Background(), names)
	if err != nil {
		t.Fatalf("Inspect %v: %v", names, err)
	}
	if len(got) != len(listed) {
		t.Errorf("Inspect %v reports %d instances; List reports %d", names, len(got), len(listed))
	}
	for _, inst := range got {
		if !reflect.DeepEqual(inst, listed[inst.Name]) {
			t.Errorf("Inspect says %+v; List says %+v", inst, listed[inst.Name])
		}
	}
}

func absent(t *testing.T, d drivers.Driver, name string) {
	t.Helper()
	if inst, ok := listed(t, d)[name]; ok {
		t.Fatalf("List reports %s (%s); want it absent", name, inst.Status)
	}
}

// expect checks that List reports s's instance with status st, and that
// what it reports of the VM is what s asked for.
func expect(t *testing.T, d drivers.Driver, s drivers.Spec, st drivers.Status) {
	t.Helper()
	inst, ok := listed(t, d)[s.Name]
	if !ok {
		t.Fatalf("List does not report %s; want it %s", s.Name, st)
	}
	if inst.Status != st {
		t.Fatalf("List reports %s %s; want %s", s.Name, inst.Status, st)
	}
	r := inst.Reported
	switch {
	case r.CPUs != 0 && r.CPUs != s.CPUs:
		t.Errorf("%s reports %d CPUs; asked for %d", s.Name, r.CPUs, s.CPUs)
	case r.MemoryGiB != 0 && r.MemoryGiB != s.MemoryGiB:
		t.Errorf("%s reports %v GiB of memory; asked for %v", s.Name, r.MemoryGiB, s.MemoryGiB)
	case r.DiskGiB != 0 && r.DiskGiB != s.DiskGiB:
		t.Errorf("%s reports a %v GiB disk; asked for %v", s.Name, r.DiskGiB, s.DiskGiB)
	case r.Arch != "" && drivers.CanonicalArch(r.Arch) != drivers.CanonicalArch(s.Arch):
		t.Errorf("%s reports arch %q; asked for %q", s.Name, r.Arch, s.Arch)
	case r.VMType != "" && r.VMType != s.VMType:
		t.Errorf("%s reports vm_type %q; asked for %q", s.Name, r.VMType, s.VMType)
	}
}
