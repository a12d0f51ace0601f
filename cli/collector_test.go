package cli

import (
	"context"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

// sbf's commands get the wider headroom within the cap; a GOGC the user
// set, and sbf-server, keep theirs; a GOMEMLIMIT the user set keeps its cap.
func TestTheCollectorIsTunedForCommandsOnly(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	if p, tuned := tuneCollector(nil, env(nil)); !tuned || p != commandGCPercent ||
		debug.SetGCPercent(100) != commandGCPercent || debug.SetMemoryLimit(math.MaxInt64) != commandMemoryLimit {
		t.Errorf("sbf's collector: %d, tuned %v", p, tuned)
	}
	if _, tuned := tuneCollector(nil, env(map[string]string{"GOMEMLIMIT": "1GiB"})); !tuned ||
		debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Error("a GOMEMLIMIT the user set was replaced")
	}
	debug.SetGCPercent(100)
	for name, c := range map[string]struct {
		server *Server
		getenv func(string) string
	}{"GOGC set": {nil, env(map[string]string{"GOGC": "50"})}, "sbf-server": {&Server{}, env(nil)}} {
		if _, tuned := tuneCollector(c.server, c.getenv); tuned || debug.SetGCPercent(100) != 100 {
			t.Errorf("%s: the collector was tuned", name)
		}
	}
}

// A helper sbf starts beside a VM (a hidden command) runs on Go's default
// collector; a command a person runs keeps the wider headroom.
func TestHelpersBesideAVMKeepGosCollector(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	noEnv := func(string) string { return "" }
	for _, c := range []struct {
		args    []string
		percent int
	}{{[]string{"version"}, commandGCPercent}, {[]string{"stop"}, 100}} {
		tuneCollector(nil, noEnv)
		runIn(context.Background(), processRoot{tuned: true}, nil, c.args, noEnv, strings.NewReader(""),
			io.Discard, io.Discard)
		if p := debug.SetGCPercent(100); p != c.percent {
			t.Errorf("sbf %s ran at GOGC %d, want %d", c.args[0], p, c.percent)
		}
	}
}
