package sim

import (
	"context"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/readcount"
)

// A volatile world (SBF_SIM_VOLATILE=1, what the benchmarks set) syncs
// nothing, and reads back the same; by default its records are synced.
func TestAVolatileWorldSyncsNothing(t *testing.T) {
	ctx := context.Background()
	for _, volatile := range []bool{false, true} {
		d, err := New(Options{Dir: t.TempDir(), Volatile: volatile})
		if err != nil {
			t.Fatal(err)
		}
		spec := drivers.Spec{Name: "sbf-01234567-api", CPUs: 2, MemoryGiB: 4, DiskGiB: 20}
		before := readcount.Syncs()
		if err := d.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx, spec); err != nil {
			t.Fatal(err)
		}
		synced := readcount.Syncs() - before
		if volatile && synced != 0 || !volatile && synced == 0 {
			t.Errorf("volatile %v: %d fsyncs for a create and a start", volatile, synced)
		}
		if list, err := d.List(ctx); err != nil || len(list) != 1 || list[0].Status != drivers.Running {
			t.Errorf("volatile %v: listed %+v %v", volatile, list, err)
		}
	}
}
