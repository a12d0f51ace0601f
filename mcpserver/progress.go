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
	sent float64 // progress must increase with every notification
	step string  // what the call is doing, as the last event said
}

// withProgress reports a call's progress when its client asked for it
// (a progress token); stop ends the beat. The engine's steps reach the
// client through the returned context.
func (s *Server) withProgress(ctx context.Context, tool string, req mcp.CallToolRequest) (context.Context, func()) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return ctx, func() {}
	}
	p := &callProgress{s: s, ctx: ctx, token: req.Params.Meta.ProgressToken, tool: tool,
		start: s.cfg.Engine.Clock.Now(), step: "starting"}
	p.send(tool + ": started")
	done := make(chan struct{})
	beat := s.cfg.Settings.ProgressBeat
	if beat <= 0 {
		beat = progressBeat
	}
	ticker := s.cfg.Engine.Clock.NewTicker(beat)
	go func() {
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
	return reconcile.WithEvents(waits.WithListener(ctx, p.wait), p.event), func() { close(done) }
}

// wait turns a wait's line into a notification.
func (p *callProgress) wait(msg string) {
	p.mu.Lock()
	p.step = msg
	p.mu.Unlock()
	p.send(p.tool + ": " + msg)
}

// event turns an engine step into a notification.
func (p *callProgress) event(ev reconcile.Event) {
	what := fmt.Sprintf("%s: %s", ev.Sandbox, ev.Kind)
	switch {
	case ev.Done && ev.Err != nil:
		what = fmt.Sprintf("%s failed after %s: %v", what, ev.Elapsed.Round(time.Second), ev.Err)
	case ev.Done:
		what = fmt.Sprintf("%s done in %s", what, ev.Elapsed.Round(time.Second))
	case ev.Message != "":
		what = what + ": " + ev.Message
	}
	p.mu.Lock()
	p.step = what
	p.mu.Unlock()
	p.send(what)
}

// beat repeats what the call waits for, with how long it has run.
func (p *callProgress) beat() {
	p.mu.Lock()
	step := p.step
	p.mu.Unlock()
	elapsed := p.s.cfg.Engine.Clock.Now().Sub(p.start).Round(time.Second)
	p.send(fmt.Sprintf("%s still running after %s; waiting for: %s", p.tool, elapsed, step))
}

func (p *callProgress) send(message string) {
	p.mu.Lock()
	defer p.mu.Unlock() // notifications leave in order, each with a greater progress
	p.sent++
	// A client that went away is no reason to fail the call.
	_ = p.s.mcp.SendNotificationToClient(p.ctx, "notifications/progress", map[string]any{
		"progressToken": p.token, "progress": p.sent, "message": clip(message)})
}
