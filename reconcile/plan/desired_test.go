package plan

import (
	"context"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// Emulation decides how a VM starts, not what it is: changing it plans
// nothing. An sbf image location is kept verbatim, not made a path.
func TestEmulationAndSbfImagesInTheDesiredSpec(t *testing.T) {
	cur := drivers.Spec{Name: "x", CPUs: 1, Emulation: "auto", Image: drivers.Image{Location: "sbf:debian-12"}}
	want := cur
	want.Emulation = "never"
	if restart, replace := diffSpecs(cur, want, "sim"); len(restart)+len(replace) != 0 || !cur.Equal(want) {
		t.Errorf("emulation change planned %v %v", restart, replace)
	}
	if got := absPath("/ws", "sbf:debian-12"); got != "sbf:debian-12" {
		t.Errorf("absPath = %q", got)
	}
	if got := absPath("/ws", "img/disk.raw"); got != "/ws/img/disk.raw" {
		t.Errorf("absPath = %q", got)
	}
}

// A backend setting whose change the backend cannot apply in place (a
// KubeVirt storage class) plans a replace, never nothing.
func TestABackendSettingPlansWhatItsRegistrationSays(t *testing.T) {
	if _, ok := drivers.Lookup("plantest"); !ok {
		drivers.Register(drivers.Registration{Name: "plantest",
			Settings: []drivers.Setting{{Key: "storage_class", Effect: drivers.Replace}},
			New: func(context.Context, drivers.Env) (drivers.Driver, error) {
				return nil, drivers.NotBuiltIn("plantest")
			}})
	}
	cur := drivers.Spec{Name: "x", CPUs: 1, Backend: map[string]string{"storage_class": "fast"}}
	want := cur
	want.Backend = map[string]string{"storage_class": "slow"}
	restart, replace := diffSpecs(cur, want, "plantest")
	if len(restart) != 0 || len(replace) != 1 || replace[0] != "storage_class fast → slow" {
		t.Errorf("a storage class change planned restart %v replace %v", restart, replace)
	}
}
