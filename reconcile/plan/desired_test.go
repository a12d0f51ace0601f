package plan

import (
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// Emulation decides how a VM starts, not what it is: changing it plans
// nothing. An sbf image location is kept verbatim, not made a path.
func TestEmulationAndSbfImagesInTheDesiredSpec(t *testing.T) {
	cur := drivers.Spec{Name: "x", CPUs: 1, Emulation: "auto", Image: drivers.Image{Location: "sbf:debian-12"}}
	want := cur
	want.Emulation = "never"
	if restart, replace := diffSpecs(cur, want); len(restart)+len(replace) != 0 || !cur.Equal(want) {
		t.Errorf("emulation change planned %v %v", restart, replace)
	}
	if got := absPath("/ws", "sbf:debian-12"); got != "sbf:debian-12" {
		t.Errorf("absPath = %q", got)
	}
	if got := absPath("/ws", "img/disk.raw"); got != "/ws/img/disk.raw" {
		t.Errorf("absPath = %q", got)
	}
}
