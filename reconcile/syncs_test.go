package reconcile

import (
	"testing"

	"github.com/sandboxforge/sbf/internal/readcount"
)

// syncsOf counts the fsyncs of the first apply of n sim sandboxes (the
// sim syncing nothing) and of the apply that destroys them all.
func syncsOf(t *testing.T, n int) (create, destroy int64) {
	t.Helper()
	h := newHarness(t, scaleSpec(n))
	h.volatile, h.eng.Parallelism = true, 8
	before := readcount.Syncs()
	h.mustApply()
	create = readcount.Syncs() - before
	h.writeSpec(scaleSpec(0))
	before = readcount.Syncs()
	h.mustApply()
	return create, readcount.Syncs() - before
}

// The state changes of a step are committed together: a create costs 2
// fsyncs (its ledger entry, and the state journal's group commit at the
// step's end, shared with the steps that ended meanwhile), a destroy 1 (it
// was 3.5 and 1.4 with the sim volatile, 7 and 4 with the sim's own),
// counted as what 20 more sandboxes cost an apply (the overrides, the
// index and the state file written whole are the run's). On top comes the
// state file's compaction, amortised: 4 fsyncs each time the journal's
// lines outgrow max(64 KiB, state.json), at most one in these 20 creates.
func TestACreateSyncsAtMostTwice(t *testing.T) {
	create10, destroy10 := syncsOf(t, 10)
	create30, destroy30 := syncsOf(t, 30)
	perCreate, perDestroy := float64(create30-create10)/20, float64(destroy30-destroy10)/20
	t.Logf("fsyncs per create %.2f, per destroy %.2f (10: %d, %d; 30: %d, %d)", perCreate, perDestroy,
		create10, destroy10, create30, destroy30)
	const compaction = 4.0 / 20
	if perCreate > 2+compaction || perDestroy > 1+compaction {
		t.Errorf("fsyncs per create %.2f, per destroy %.2f: want at most 2 and 1 (and a compaction)",
			perCreate, perDestroy)
	}
}
