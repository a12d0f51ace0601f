//go:build race

package composefile

// raceDetector: the race detector's allocator reserves address space of
// its own, so a bound on it fails differently (and CPU time runs out
// first); the address space tests skip under it.
const raceDetector = true
