package reconcile

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// endedRecords writes n destroyed sandboxes' records (a day old, so
// [lease] keep_records keeps them) into the harness's state, as a
// workspace that made and destroyed them would hold.
func endedRecords(b testing.TB, h *harness, n int) {
	b.Helper()
	_, id, err := spec.WorkspaceIdentity(h.root)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(h.root, spec.Dir)
	store, err := state.Open(b.Context(), dir, h.root, id, h.eng.holder(), time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	store.Archive(func(string) bool { return true }) // none of them is declared
	ended := t0.Add(-24 * time.Hour)
	err = store.Update(func(f *state.File) {
		for i := range n {
			name := fmt.Sprintf("gone%05d", i)
			vm := drivers.Spec{Name: drivers.InstanceName(id, name), CPUs: 2, MemoryGiB: 4, DiskGiB: 20,
				VMType: "qemu", Template: "template:docker"}
			f.Sandboxes[name] = &state.Sandbox{Driver: "sim", Instance: vm.Name, Phase: state.Destroyed,
				VM: state.RecordOf(vm), CreatedAt: &ended, UpdatedAt: ended}
		}
	})
	if err == nil {
		err = store.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkApplyBesideEndedRecords is the first `sbf apply` of one sim
// sandbox in a workspace that keeps n destroyed sandboxes' records: what
// ended records cost the hot path (issue 43: 5,000 may add at most 5 ms).
func BenchmarkApplyBesideEndedRecords(b *testing.B) {
	for _, n := range []int{0, 5000} {
		b.Run(fmt.Sprintf("ended=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				h := newHarness(b, scaleSpec(1))
				h.volatile = true
				endedRecords(b, h, n)
				b.StartTimer()
				cpu := cpuTime()
				if _, err := h.apply(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000, "cpu-ms")
			}
		})
	}
}
