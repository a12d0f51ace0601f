package reconcile

import (
	"fmt"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// convergedWorld builds n sandboxes that are exactly as desired.
func convergedWorld(n int) (plan.Desired, *state.File, plan.Observed) {
	d := plan.Desired{WorkspaceID: goldenWorkspaceID, Sandboxes: map[string]plan.DesiredSandbox{}}
	rec := state.New("/ws", goldenWorkspaceID)
	obs := plan.Observed{Instances: map[string]drivers.Instance{}, Unavailable: map[string]error{}}
	lease := &spec.LeaseRecord{AcquiredAt: t0, ExpiresAt: t0.Add(time.Hour)}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("sb%05d", i)
		inst := drivers.InstanceName(goldenWorkspaceID, name)
		vm := drivers.Spec{Name: inst, CPUs: 2, MemoryGiB: 4, DiskGiB: 20, VMType: "qemu", Template: "template:docker"}
		d.Sandboxes[name] = plan.DesiredSandbox{Name: name, Instance: inst, Driver: "sim", VM: vm, Lease: lease}
		rec.Sandboxes[name] = &state.Sandbox{Driver: "sim", Instance: inst, Phase: state.Running, VM: state.RecordOf(vm)}
		obs.Instances[inst] = drivers.Instance{Name: inst, Driver: "sim", Status: drivers.Running, Reported: vm}
	}
	return d, rec, obs
}

func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{1, 100, 10000} {
		b.Run(fmt.Sprintf("sandboxes=%d", n), func(b *testing.B) {
			d, rec, obs := convergedWorld(n)
			b.ReportAllocs()
			for b.Loop() {
				if p := plan.Compute(d, rec, obs, t0); !p.Empty() {
					b.Fatal("a converged world planned changes")
				}
			}
		})
	}
}

// BenchmarkConvergedApply is `sbf apply` on a converged workspace, in
// process: load the layered spec, lock the state, renew leases, list the
// sim world, plan nothing.
func BenchmarkConvergedApply(b *testing.B) {
	h := newHarness(b, twoSandboxes)
	h.volatile = true
	h.mustApply()
	b.ResetTimer()
	for b.Loop() {
		res, err := h.apply()
		if err != nil || !res.Plan.Empty() {
			b.Fatalf("apply: %v %+v", err, res.Plan)
		}
	}
}

// BenchmarkParallelCreate converges 16 sandboxes whose creates each take
// 1 s (simulated), with the executor's parallelism at 16 and at 1.
func BenchmarkParallelCreate(b *testing.B) {
	text := "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 32\n"
	for i := 0; i < 16; i++ {
		text += fmt.Sprintf("[sandboxes.sb%02d]\n", i)
	}
	for _, par := range []int{16, 1} {
		b.Run(fmt.Sprintf("parallelism=%d", par), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				h := newHarness(b, text)
				h.latency, h.simClock = "create=1s", clock.Real{} // a benchmark of real time
				h.eng.Parallelism = par
				b.StartTimer()
				if _, err := h.apply(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
