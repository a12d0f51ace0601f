package cli

import (
	"runtime/debug"
	"testing"
)

// sbf's commands get the wider headroom; a GOGC the user set, and
// sbf-server, keep theirs.
func TestTheCollectorIsTunedForCommandsOnly(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	noEnv := func(string) string { return "" }
	if p, tuned := tuneCollector(nil, noEnv); !tuned || p != commandGCPercent ||
		debug.SetGCPercent(100) != commandGCPercent {
		t.Errorf("sbf's collector: %d, tuned %v", p, tuned)
	}
	userSet := func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	}
	for name, c := range map[string]struct {
		server *Server
		getenv func(string) string
	}{"GOGC set": {nil, userSet}, "sbf-server": {&Server{}, noEnv}} {
		if _, tuned := tuneCollector(c.server, c.getenv); tuned || debug.SetGCPercent(100) != 100 {
			t.Errorf("%s: the collector was tuned", name)
		}
	}
}
