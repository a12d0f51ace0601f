package mcpserver

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/sandboxforge/sbf/internal/coded"
)

// DefaultMaxToolCalls is how many tool calls a server works on at once
// unless SBF_MAX_TOOL_CALLS says otherwise. A call at work holds
// O(responseBudget) of output at worst (budget.go), about 20 MiB: at 8 at
// once the server stays within a few hundred MiB whatever callers and
// guests do.
const DefaultMaxToolCalls = 8

// waitingPerSlot is how many calls may wait per slot: a waiting call holds
// only its arguments (at most a request body), and an agent's burst of
// small edits (50 extend_instance_ttl at once) should wait, not fail.
const waitingPerSlot = 8

// callSlots bounds the tool calls a server works on at once (every door:
// stdio, Streamable HTTP, in process; calls made as tasks too). A call
// finding every slot taken waits for one, first come first served, behind
// at most waitingPerSlot others per slot; past that it is refused
// (SERVER_BUSY) rather than held: nothing bounds calls in flight otherwise.
type callSlots struct {
	max, maxWaiting int
	running         chan struct{} // one token per call at work
	waiting         atomic.Int64
}

func newCallSlots(max int) *callSlots {
	if max <= 0 {
		max = DefaultMaxToolCalls
	}
	return &callSlots{max: max, maxWaiting: max * waitingPerSlot, running: make(chan struct{}, max)}
}

// acquire takes a slot for a call of tool, waiting while the queue has
// room; release gives it back. Waiting ends with ctx (a cancelled call,
// a closed connection).
func (c *callSlots) acquire(ctx context.Context, tool string) (release func(), err error) {
	select {
	case c.running <- struct{}{}:
		return c.release, nil
	default:
	}
	if c.waiting.Add(1) > int64(c.maxWaiting) {
		c.waiting.Add(-1)
		return nil, coded.New(coded.ServerBusy,
			map[string]any{"tool": tool, "running": c.max, "waiting": c.maxWaiting, "setting": "SBF_MAX_TOOL_CALLS"},
			"the server is working on %d tool calls and %d more are waiting; call %s again once one of "+
				"your calls has answered (the operator sets how many run at once: SBF_MAX_TOOL_CALLS)",
			c.max, c.maxWaiting, tool)
	}
	defer c.waiting.Add(-1)
	select {
	case c.running <- struct{}{}:
		return c.release, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s waited for one of the %d tool calls at work to end: %w", tool, c.max,
			context.Cause(ctx))
	}
}

func (c *callSlots) release() { <-c.running }
