package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	waits "github.com/sandboxforge/sbf/internal/progress"
	"github.com/sandboxforge/sbf/reconcile"
)

// progressBeat is the longest a call with a progress token goes without a
// notification: clients time requests out (the TypeScript SDK after 60 s
// unless progress resets it), and a VM boots for minutes under emulation.
const progressBeat = 10 * time.Second

// callProgress sends one call's notifications/progress: each step the
// engine takes for it, and a beat naming the step it waits for while the
// step is silent.
type callProgress struct {
	s     *Server
	ctx   context.Context
	token mcp.ProgressToken
	tool  string
	start time.Time

	mu   sync.Mutex
	step string // what the call is doing, as the last event said
	// The progress sent: the steps done, plus a fraction that grows with
	// each notification since (n/(n+1): below the next step, and strictly
	// increasing, as the protocol asks). The total, once an engine run
	// says its steps, is every run's steps plus one: the call's own answer.
	done, since int
	runs        map[uint64]int // each engine run of the call → its steps
}

// withProgress reports a call's progress when its client asked for it
// (a progress token); stop ends the beat. The engine's steps reach the
// client through the returned context.
func (s *Server) withProgress(ctx context.Context, tool string, req mcp.CallToolRequest) (context.Context, func()) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return ctx, func() {}
	}
	p := &callProgress{s: s, ctx: ctx, token: req.Params.Meta.ProgressToken, tool: tool,
		start: s.cfg.Engine.Clock.Now(), step: "starting", runs: map[uint64]int{}}
	p.send(tool+": started", false)
	done := make(chan struct{})
	beat := s.cfg.Settings.ProgressBeat
	if beat <= 0 {
		beat = progressBeat
	}
	ticker := s.cfg.Engine.Clock.NewTicker(beat)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		defer ticker.Stop()
		for {
			select {
			case <-ticker.C():
				p.beat()
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	// What the call waits for outside a run's steps (a lock another sbf
	// holds, a sandbox still booting) reaches the client too.
	return reconcile.WithEvents(waits.WithListener(ctx, p.wait), p.event), func() {
		close(done)
		<-exited // a beat being sent is queued before the flush counts
		s.flushNotifications(ctx)
	}
}

// wait turns a wait's line into a notification.
func (p *callProgress) wait(msg string) {
	p.mu.Lock()
	p.step = msg
	p.mu.Unlock()
	p.send(p.tool+": "+msg, false)
}

// event turns an engine step into a notification.
func (p *callProgress) event(ev reconcile.Event) {
	what := fmt.Sprintf("%s: %s", ev.Sandbox, ev.Kind)
	switch {
	case ev.Lease != nil:
		what = fmt.Sprintf("%s: lease until %s", ev.Sandbox, iso(ev.Lease.New))
	case ev.Done && ev.Err != nil:
		what = fmt.Sprintf("%s failed after %s: %v", what, ev.Elapsed.Round(time.Second), ev.Err)
	case ev.Done:
		what = fmt.Sprintf("%s done in %s", what, ev.Elapsed.Round(time.Second))
	case ev.Message != "":
		what = what + ": " + ev.Message
	}
	p.mu.Lock()
	p.step = what
	if ev.Run != 0 {
		p.runs[ev.Run] = ev.Steps
	}
	p.mu.Unlock()
	p.send(what, ev.Done && ev.Lease == nil)
}

// beat repeats what the call waits for, with how long it has run.
func (p *callProgress) beat() {
	p.mu.Lock()
	step := p.step
	p.mu.Unlock()
	elapsed := p.s.cfg.Engine.Clock.Now().Sub(p.start).Round(time.Second)
	p.send(fmt.Sprintf("%s still running after %s; waiting for: %s", p.tool, elapsed, step), false)
}

// send notifies the client; stepDone says an engine step just ended.
func (p *callProgress) send(message string, stepDone bool) {
	p.mu.Lock()
	defer p.mu.Unlock() // notifications leave in order, each with a greater progress
	if stepDone {
		p.done, p.since = p.done+1, 0
	} else {
		p.since++
	}
	params := map[string]any{"progressToken": p.token,
		"progress": float64(p.done) + float64(p.since)/float64(p.since+1), "message": clip(message)}
	if len(p.runs) > 0 {
		total := 1
		for _, steps := range p.runs {
			total += steps
		}
		params["total"] = float64(total)
	}
	p.s.sendProgress(p.ctx, params)
}
