package reconcile

import (
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/spec"
)

// listOnly is a backend that cannot look instances up (no Inspect).
type listOnly struct{ Driver }

// What a run's VMs became is looked up, not listed again: the instances it
// touched are inspected over what was observed before it, so the result
// says the same as a second listing would, and a backend that cannot look
// instances up is listed again.
func TestARunLooksUpWhatItsVMsBecame(t *testing.T) {
	for _, inspects := range []bool{true, false} {
		h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
		if !inspects {
			h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
				d, err := h.driver(name, r)
				return listOnly{d}, err
			}
		}
		before := readcount.Now()
		res := h.mustApply()
		got := readcount.Now().Since(before)
		wantList, wantInspect := int64(1), int64(1)
		if !inspects {
			wantList, wantInspect = 2, 0
		}
		if got.Of(readcount.List) != wantList || got.Of(readcount.Inspect) != wantInspect {
			t.Errorf("inspects %v: creating two sandboxes read %v, want list=%d inspect=%d", inspects, got,
				wantList, wantInspect)
		}
		for _, sb := range []string{"api", "web"} {
			inst, ok := res.Observed.Instances[h.instance(sb)]
			if !ok || inst.Status != drivers.Running || inst.SSH == "" || inst.Driver != "sim" {
				t.Errorf("inspects %v: after the create, %s was observed as %+v (%v)", inspects, sb, inst, ok)
			}
		}
		res = h.mustApplyWith(Options{Intent: Destroy{Sandboxes: []string{"web"}}})
		if _, ok := res.Observed.Instances[h.instance("web")]; ok {
			t.Errorf("inspects %v: a destroyed sandbox's VM is still observed", inspects)
		}
		if inst := res.Observed.Instances[h.instance("api")]; inst.Status != drivers.Running {
			t.Errorf("inspects %v: the sandbox the destroy left alone was observed as %+v", inspects, inst)
		}
	}
}
