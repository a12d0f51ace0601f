package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
)

// With one call slot, a second call waits for the first, and once 8 wait
// the next is refused with SERVER_BUSY, saying what to do; once the first
// ends the waiting ones run.
func TestToolCallsInFlightAreBounded(t *testing.T) {
	f := newFixture(t, simSpec)
	f.start(Settings{SweepInterval: time.Minute, Session: "local", MaxToolCalls: 1})
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"]
	gate := filepath.Join(t.TempDir(), "go")
	answers := make(chan string, 1+waitingPerSlot)
	run := func(command string) {
		out, _ := f.call("run_command", map[string]any{"instance_id": id, "command": command})
		answers <- fmt.Sprint(out["stdout"])
	}
	go run("while [ ! -e " + gate + " ]; do sleep 0.02; done; echo held")
	waitFor(t, func() bool { return len(f.srv.calls.running) == 1 })
	for i := range waitingPerSlot {
		go run(fmt.Sprintf("echo waited %d", i))
	}
	waitFor(t, func() bool { return f.srv.calls.waiting.Load() == waitingPerSlot })
	busy := f.fails("get_desired_state", nil, coded.ServerBusy)
	if msg, _ := busy["message"].(string); !strings.Contains(msg, "SBF_MAX_TOOL_CALLS") ||
		!strings.Contains(msg, "get_desired_state") {
		t.Errorf("the refusal says nothing of what to do: %v", busy)
	}
	os.WriteFile(gate, nil, 0o644)
	got := map[string]bool{}
	for range 1 + waitingPerSlot {
		got[<-answers] = true
	}
	if !got["held\n"] || !got["waited 0\n"] || !got[fmt.Sprintf("waited %d\n", waitingPerSlot-1)] ||
		len(got) != 1+waitingPerSlot {
		t.Errorf("the held and the waiting calls answered %v", got)
	}
	f.ok("get_desired_state", nil)
}

// A call waiting for a slot stops waiting when its context ends, and the
// queue it left has room again.
func TestAWaitingCallLeavesWithItsContext(t *testing.T) {
	c := newCallSlots(1)
	release, err := c.acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := c.acquire(ctx, "b")
		done <- err
	}()
	waitFor(t, func() bool { return c.waiting.Load() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait ended with %v", err)
	}
	if c.waiting.Load() != 0 {
		t.Errorf("%d waiting after the wait ended", c.waiting.Load())
	}
	release()
	if release, err := c.acquire(context.Background(), "c"); err != nil {
		t.Errorf("a free slot was refused: %v", err)
	} else {
		release()
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the condition did not hold within 10 s")
		}
	}
}
