package testutil

import "testing"

// WithoutRace skips t under the race detector, saying why. A test that moves megabytes through
// one goroutine runs ten times slower under it and gives it nothing to find; a test of an
// address space bound meets the detector's own mappings. make test runs the packages whose
// tests call this a second time, without -race (scripts/test.sh), so each such test runs.
func WithoutRace(t testing.TB, why string) {
	t.Helper()
	if Race {
		t.Skip("not under the race detector (" + why + "): make test runs it without -race")
	}
}
