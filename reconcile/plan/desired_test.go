package plan

import (
	"context"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
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

// The sandbox a copy is made from, as the locks take it before planning:
// clone_of, an explicit SANDBOX/NAME, a bare name only one other sandbox
// has; none when the bare name is nobody's or several sandboxes'.
func TestSourceOf(t *testing.T) {
	r := &spec.Resolved{Config: spec.Config{Sandboxes: map[string]spec.Sandbox{
		"clone": {CloneOf: "api"}, "named": {FromSnapshot: "api/base"}, "bare": {FromSnapshot: "base"},
		"shared": {FromSnapshot: "both"}, "nobody": {FromSnapshot: "missing"}, "plain": {}}}}
	rec := &state.File{Snapshots: []*state.Snapshot{{Sandbox: "api", Name: "base"}, {Sandbox: "bare", Name: "base"},
		{Sandbox: "api", Name: "both"}, {Sandbox: "web", Name: "both"}}}
	for name, want := range map[string]string{"clone": "api", "named": "api", "bare": "api", "shared": "",
		"nobody": "", "plain": ""} {
		if got := SourceOf(r, rec, name); got != want {
			t.Errorf("SourceOf(%s) = %q, want %q", name, got, want)
		}
	}
	if got := SourceOf(r, nil, "bare"); got != "" {
		t.Errorf("with no state, a bare name's source is %q", got)
	}
}

// Resolving sources fills in the copy a plan reads, never the desired
// state it was given (a caller may plan it again); a desired state with no
// copies in it is handed back as it is.
func TestResolveSourcesLeavesItsInputAlone(t *testing.T) {
	d := Desired{Sandboxes: map[string]DesiredSandbox{"api": {Name: "api"}, "copy": {Name: "copy", CloneOf: "api"}}}
	out := resolveSources(d, &state.File{Sandboxes: map[string]*state.Sandbox{}}, Observed{})
	if d.Sandboxes["copy"].Source != nil || d.Sandboxes["copy"].SourceErr != nil {
		t.Errorf("the input was changed: %+v", d.Sandboxes["copy"])
	}
	if out.Sandboxes["copy"].SourceErr == nil {
		t.Errorf("a clone of a sandbox with no VM resolved to %+v, want an error", out.Sandboxes["copy"])
	}
	delete(d.Sandboxes, "copy")
	if same := resolveSources(d, nil, Observed{}); len(same.Sandboxes) != 1 {
		t.Errorf("without copies: %v", same.Sandboxes)
	}
}
