package mcpserver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// progressOf collects the progress notifications the fixture's client
// receives.
func progressOf(f *fixture) func() []map[string]any {
	var mu sync.Mutex
	var got []map[string]any
	f.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			got = append(got, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	return func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([]map[string]any(nil), got...)
	}
}

// A call given a progress token reports each engine step and, while a
// step is silent (a VM booting), beats at least every 10 s with what it
// waits for: a client that resets its timeout on progress never times a
// boot out. Once the engine knows the steps, progress has a total.
func TestLongCallsReportProgress(t *testing.T) {
	f := newFixture(t, simSpec)
	f.srv.cfg.Engine.Drivers = func(string, *spec.Resolved) (reconcile.Driver, error) {
		return sim.New(sim.Options{Dir: f.simDir, Clock: f.clock, Latency: "create=35s"})
	}
	progress := progressOf(f)
	req := mcp.CallToolRequest{}
	req.Params.Name = "create_instance"
	req.Params.Arguments = map[string]any{"workspace_root": f.root}
	req.Params.Meta = &mcp.Meta{ProgressToken: "boot-1"}
	done := make(chan error, 1)
	go func() {
		res, err := f.c.CallTool(context.Background(), req)
		if err == nil && res.IsError {
			err = errors.New(res.Content[0].(mcp.TextContent).Text)
		}
		done <- err
	}()
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			waiting = false
		case <-time.After(time.Millisecond):
			if f.clock.Waiters() >= 2 { // the boot's latency and the beat
				f.clock.Advance(10 * time.Second)
			}
		}
	}
	got := progress()
	var last float64
	var beats, created, totals int
	for _, n := range got {
		p, _ := n["progress"].(float64)
		msg, _ := n["message"].(string)
		if n["progressToken"] != "boot-1" || p <= last {
			t.Errorf("notification %v: want token boot-1 and progress above %v", n, last)
		}
		last = p
		// Once the engine's run says its steps, each notification has a
		// total the progress stays below until the call answers.
		if total, ok := n["total"].(float64); ok {
			totals++
			if p >= total {
				t.Errorf("notification %v: progress at or past its total", n)
			}
		} else if totals > 0 {
			t.Errorf("notification %v has no total after one had it", n)
		}
		if strings.Contains(msg, "still running") && strings.Contains(msg, "waiting for: ") &&
			strings.Contains(msg, ": create") {
			beats++
		}
		if strings.Contains(msg, ": create done in ") {
			created++
		}
	}
	if totals == 0 {
		t.Errorf("no notification says a total: %v", got)
	}
	if beats < 3 || created != 1 {
		t.Errorf("%d beats naming the create (want ≥ 3 over a 35 s boot), %d create done (want 1): %v",
			beats, created, got)
	}
}

// Without a progress token nothing is sent.
func TestNoProgressUnlessAsked(t *testing.T) {
	f := newFixture(t, simSpec)
	progress := progressOf(f)
	f.ok("create_instance", map[string]any{"workspace_root": f.root})
	if got := progress(); len(got) != 0 {
		t.Errorf("progress sent without a token: %v", got)
	}
}
