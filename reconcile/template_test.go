package reconcile

import (
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/state"
)

const templateSpec = `[vm]
driver = "sim"
cpus = 2
[pool.small]
size = 0
memory_template = true
max_idle = "1h"
[lease]
max_instances = 20
`

// template is the world's one memory template (fails unless there is one).
func (h *harness) template(t *testing.T) string {
	t.Helper()
	var found []string
	for name, inst := range h.world() {
		if l := inst.Label; l != nil && l.Spare != nil && l.Spare.Memory {
			if inst.Status != drivers.Stopped {
				t.Errorf("memory template %s is %s, want stopped", name, inst.Status)
			}
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		t.Fatalf("memory templates in the world: %v", found)
	}
	return found[0]
}

// mutatingOps are the sim's operations on instance since mark, by name.
func (h *harness) mutatingOps(mark int, instance string) string {
	_, ops := h.mutations(mark)
	var kinds []string
	for _, o := range ops[mark:] {
		if o.Mutating() && o.Instance == instance {
			kinds = append(kinds, o.Op)
		}
	}
	return strings.Join(kinds, " ")
}

// A pool with memory_template keeps one saved, stopped VM; a create of
// its shape starts from it (no create, no boot: the sim's fork-child),
// with its own identity, and the template stays for the next create.
func TestAMemoryTemplateServesCreatesWithoutABoot(t *testing.T) {
	h := newHarness(t, templateSpec+"[sandboxes.api]\n[sandboxes.web]\n")
	res := h.fill()
	if steps(res.Plan) != "pool.small:create" || !strings.Contains(res.Plan.Actions[0].Cause, "memory template") {
		t.Fatalf("first pool pass: %s %+v", steps(res.Plan), res.Plan.Actions)
	}
	tpl := h.template(t)
	rep := h.fill()
	if len(rep.Plan.Actions) != 0 {
		t.Fatalf("a pool with its template plans %s", steps(rep.Plan))
	}
	if pr := rep.PoolsReport().Pools; len(pr) != 1 || !pr[0].MemoryTemplate || pr[0].Templates != 1 ||
		len(pr[0].Spares) != 1 || pr[0].Spares[0].State != "template" {
		t.Errorf("pool status %+v", pr)
	}
	ids := map[string]string{}
	for _, sb := range []string{"api", "web"} {
		mark := h.logLen()
		up, err := h.up(sb)
		if err != nil {
			t.Fatal(err)
		}
		a := up.Plan.Actions[0]
		if steps(up.Plan) != sb+":create" || a.Template != tpl || a.Change().Template != tpl {
			t.Fatalf("up %s plans %s %+v", sb, steps(up.Plan), up.Plan.Actions)
		}
		var out strings.Builder
		up.Plan.Render(&out, plan.Style{})
		if !strings.Contains(out.String(), "from memory template "+tpl) {
			t.Errorf("rendered plan:\n%s", out.String())
		}
		inst := h.instance(sb)
		if got := h.mutatingOps(mark, inst); got != "fork-child" {
			t.Errorf("%s's VM was made by %q, want fork-child alone (no create, no boot)", sb, got)
		}
		if got := h.mutatingOps(mark, tpl); got != "" {
			t.Errorf("the template was changed by %q", got)
		}
		if rec := up.recorded.Sandboxes[sb]; rec.Phase != state.Running || rec.Instance != inst || rec.ExpiresAt == nil {
			t.Errorf("record of %s = %+v", sb, rec)
		}
		if got := h.guestRun(t, sb, "cat etc/hostname"); got != inst {
			t.Errorf("%s's hostname is %q, want %q", sb, got, inst)
		}
		ids[sb] = h.guestRun(t, sb, "cat etc/machine-id")
	}
	if ids["api"] == ids["web"] || len(ids["api"]) != 32 {
		t.Errorf("two creates from one template share the machine id %q", ids["api"])
	}
	if again := h.template(t); again != tpl {
		t.Errorf("template %s became %s", tpl, again)
	}
	if p := h.plan(); len(p.Actions) != 0 {
		t.Errorf("plan after the creates: %s", steps(p))
	}
}

// A template that cannot serve (its start fails) is not the create's
// failure: what it made is removed and the VM boots.
func TestACreateWhoseTemplateFailsBoots(t *testing.T) {
	h := newHarness(t, templateSpec+"[sandboxes.api]\n")
	h.fill()
	tpl := h.template(t)
	h.faults = "fork-child:api=fail"
	mark := h.logLen()
	up, err := h.up("api")
	if err != nil {
		t.Fatal(err)
	}
	if a := up.Plan.Actions[0]; a.Template != tpl {
		t.Fatalf("up plans %+v", a)
	}
	if got := h.mutatingOps(mark, h.instance("api")); got != "fork-child force-stop delete create start" {
		t.Errorf("the create did %q, want the failed start undone and a boot", got)
	}
	if rec := up.recorded.Sandboxes["api"]; rec.Phase != state.Running {
		t.Errorf("record %+v", rec)
	}
}

// The template follows its pool: a shape change deletes it and makes a
// new one, max_idle replaces it, a sandbox with mounts boots, and a pool
// without memory_template keeps none.
func TestAMemoryTemplateFollowsItsPool(t *testing.T) {
	h := newHarness(t, templateSpec+"[sandboxes.api]\nmounts = [\".:/src\"]\n")
	h.fill()
	tpl := h.template(t)
	if p := h.plan(); steps(p) != "api:create" || p.Actions[0].Template != "" {
		t.Errorf("a sandbox with mounts plans %s %+v", steps(p), p.Actions)
	}
	h.writeSpec(strings.Replace(templateSpec, "cpus = 2", "cpus = 3", 1))
	res := h.fill()
	if steps(res.Plan) != "pool.small:delete pool.small:create" || !strings.Contains(res.Plan.Actions[0].Cause,
		"shape changed") {
		t.Errorf("after a shape change: %s %+v", steps(res.Plan), res.Plan.Actions)
	}
	fresh := h.template(t)
	if fresh == tpl {
		t.Errorf("the template %s was kept over a shape change", tpl)
	}
	h.clock.Advance(61 * time.Minute)
	if res := h.fill(); steps(res.Plan) != "pool.small:delete pool.small:create" {
		t.Errorf("past max_idle: %s", steps(res.Plan))
	}
	if again := h.template(t); again == fresh {
		t.Errorf("the idle template %s was not replaced", fresh)
	}
	cpus3 := strings.Replace(templateSpec, "cpus = 2", "cpus = 3", 1)
	h.writeSpec(strings.Replace(cpus3, "memory_template = true", "", 1))
	if res := h.fill(); steps(res.Plan) != "pool.small:delete" || !strings.Contains(res.Plan.Actions[0].Cause,
		"keeps no memory template") {
		t.Errorf("memory_template removed: %s %+v", steps(res.Plan), res.Plan.Actions)
	}
}

// A backend that cannot keep memory templates gets none: the pool reports
// why and what to do instead, and still keeps its running spares.
func TestAPoolAsksForATemplateTheBackendCannotKeep(t *testing.T) {
	vm := drivers.Spec{CPUs: 2, MemoryGiB: 1, DiskGiB: 10}
	d := plan.Desired{WorkspaceID: "ws_0123456789abcdef", Pools: map[string]plan.DesiredPool{"small": {Name: "small",
		Driver: "vz", Shape: drivers.Shape("vz", vm), VM: vm, Size: 1, MaxIdle: time.Hour, Memory: true}}}
	obs := plan.NewObserved(d.WorkspaceID, map[string][]drivers.Instance{"vz": nil}, nil, map[string]bool{"vz": true})
	p := plan.ComputePools(d, obs, t0)
	if len(p.Problems) != 1 || !strings.Contains(p.Problems[0].Message, "cannot keep memory templates") ||
		!strings.Contains(p.Problems[0].Message, "memory_template = false") {
		t.Errorf("problems %+v", p.Problems)
	}
	if len(p.Actions) != 1 || p.Actions[0].Spare == nil || p.Actions[0].Spare.Memory {
		t.Errorf("actions %+v; want the one running spare", p.Actions)
	}
	obs.Templates = map[string]bool{"vz": true}
	if p := plan.ComputePools(d, obs, t0); len(p.Problems) != 0 || len(p.Actions) != 2 || !p.Actions[1].Spare.Memory {
		t.Errorf("with templates: %+v %+v", p.Actions, p.Problems)
	}
}
