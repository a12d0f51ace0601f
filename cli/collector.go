package cli

import (
	"math"
	"runtime/debug"
)

// commandGCPercent is the collector's headroom for sbf's own commands.
// They run for milliseconds to minutes on a live heap of a few MB, where
// Go's default (a cycle per 100% of growth, the first at 4 MB) runs four or
// five cycles in a 1,000-sandbox `sbf status`: about a tenth of its CPU.
// At 800 the first cycle comes at 32 MB, past all that such a status
// allocates (~25 MB: at 400 it ran one cycle, 5 ms of its ~55), and the heap
// stays within nine times what is live, the collector running as often as
// it must past commandMemoryLimit (a soft limit).
const commandGCPercent = 800

// commandMemoryLimit caps what that headroom may cost: past it the
// collector runs as often as it must. `sbf reconcile --watch` runs for good
// in a pod limited to 256 MiB (deploy/kubevirt/deployment.yaml).
const commandMemoryLimit = 128 << 20

// tuneCollector gives sbf's commands more headroom, within
// commandMemoryLimit, unless GOGC (or GOMEMLIMIT, for the cap) says
// otherwise. sbf-server (server != nil: `sbf mcp`, `sbf serve`) keeps Go's
// default: it holds sessions for hours within its memory bound (issue 42);
// so do the hidden helpers sbf starts beside each VM (untuneCollector).
func tuneCollector(server *Server, getenv func(string) string) (percent int, tuned bool) {
	if server != nil || getenv("GOGC") != "" {
		return 0, false
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(commandMemoryLimit)
	}
	debug.SetGCPercent(commandGCPercent)
	return commandGCPercent, true
}

// untuneCollector gives Go's default back to a helper that lives as long as
// a VM (exec-broker, the egress proxy, a backend's supervisor): one per VM,
// each holding little, where nine times little adds up.
func untuneCollector(getenv func(string) string) {
	debug.SetGCPercent(100)
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(math.MaxInt64)
	}
}
