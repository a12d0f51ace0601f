package reconcile

import (
	"testing"

	"github.com/sandboxforge/sbf/internal/readcount"
)

// A run reads no record of an ended sandbox: they wait in the archive,
// which a plan reads only when asked for them (status --all), and a name
// only the archive records is still INSTANCE_TERMINAL, not unknown.
func TestARunReadsNoEndedRecord(t *testing.T) {
	h := newHarness(t, scaleSpec(1))
	endedRecords(t, h, 200)
	before := readcount.Now()
	res := h.mustApply()
	if n := readcount.Now().Since(before).Of(readcount.Archive); n != 0 || len(res.recorded.Sandboxes) != 1 {
		t.Fatalf("an apply read the archive %d times and saw %d records", n, len(res.recorded.Sandboxes))
	}
	if got := len(h.mustPlanState(t).Sandboxes); got != 201 {
		t.Errorf("status --all sees %d records, want 201", got)
	}
	rows, ended := 0, 0
	res, err := h.planWith(Options{Intent: Reconcile{}, Ended: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Status() {
		rows++
		if row.Ended() {
			ended++
		}
	}
	if rows != 201 || ended != 200 {
		t.Errorf("status --all: %d rows, %d ended", rows, ended)
	}
	if _, err := h.eng.Target(h.ws(), "gone00007"); codeOf(err) != "INSTANCE_TERMINAL" {
		t.Errorf("an archived sandbox's target: %v", err)
	}
	if _, err := h.eng.Target(h.ws(), "never"); codeOf(err) != "INSTANCE_NOT_FOUND" {
		t.Errorf("an unknown sandbox's target: %v", err)
	}
}
