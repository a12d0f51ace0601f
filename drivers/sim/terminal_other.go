//go:build !unix

package sim

// hasTerminal: the sim opens pseudo-terminals only where the host has them.
const hasTerminal = false
