package readcount

import "testing"

// Counts are differences of the process's counters, named in order.
func TestCountsSince(t *testing.T) {
	before := Now()
	Add(State)
	Add(State)
	Add(Resolve)
	got := Now().Since(before)
	if got.Of(State) != 2 || got.Of(Resolve) != 1 || got.Of(SpecLoad) != 0 {
		t.Errorf("counted %v", got)
	}
	if s := got.String(); s != "resolve=1 state=2" {
		t.Errorf("shown as %q", s)
	}
	if len(Kinds()) != len(names) || Kinds()[len(names)-1].String() != "archive" {
		t.Errorf("kinds %v", Kinds())
	}
}
