package proc

import "runtime"

// OneP runs this process's Go code on one P (GOMAXPROCS=1) unless its
// environment sets GOMAXPROCS. It is for a process of sbf's own whose work
// is waiting on guests: the exec broker, a stdio MCP server (one client).
// Their requests hop across half a dozen goroutines (the client's stream,
// the SSH connection's reader, the guest shell's two streams); on one P
// they hand over without waking another thread. Measured on a Lima VM under
// emulation (docs/performance.md): the broker's p50 4.34 → 4.07 ms; a stdio
// server's `run_command` 17–22% less CPU and no call slower.
func OneP(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
