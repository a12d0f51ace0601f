//go:build !linux

package confine

import "runtime"

// Probe reports what Self would enforce here: nothing, off Linux.
func Probe() Report {
	return Report{Mechanism: None, Why: "the kernel of " + runtime.GOOS + " offers sbf no confinement it uses"}
}

// Self enforces nothing off Linux and says so: callers rely on their own
// explicit checks there.
func Self(Policy) (Report, error) { return Probe(), nil }
