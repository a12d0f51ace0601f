// Package progress carries, in a context, where a long operation says what
// it is doing and what it waits for, and keeps a wait from going silent: a
// beat that names the wait at a fixed interval until it ends. Drivers
// (drivers.Progressf), locks (internal/flock) and the data plane report
// through it; each door decides where the lines go (sbf's stderr, an MCP
// client's progress notifications).
package progress

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// Every is how often a wait says it is still waiting. sbf promises a line
// at least every 20 s; a beat of 15 s keeps that promise on a loaded
// machine, where a timer fires late and a line takes a while to write.
const Every = 15 * time.Second

type listenerKey struct{}

// WithListener returns a context whose operations report progress to fn.
// A listener set deeper (an action of a run) takes the place of one set
// higher (the command) for what runs under it.
func WithListener(ctx context.Context, fn func(msg string)) context.Context {
	return context.WithValue(ctx, listenerKey{}, fn)
}

// Reportf reports progress to the context's listener, if any.
func Reportf(ctx context.Context, format string, args ...any) {
	if fn, ok := ctx.Value(listenerKey{}).(func(string)); ok {
		fn(fmt.Sprintf(format, args...))
	}
}

// Listening says whether the context has a listener.
func Listening(ctx context.Context) bool {
	_, ok := ctx.Value(listenerKey{}).(func(string))
	return ok
}

// Beat reports say(elapsed) to the context's listener every Every until
// stop is called (stop waits for a line being written). Start it before
// the wait begins: the interval is measured from the start of the wait,
// whatever the wait's first steps cost. Without a listener it does
// nothing. c measures the intervals (a test's fake clock drives it).
func Beat(ctx context.Context, c clock.Clock, say func(elapsed time.Duration) string) (stop func()) {
	if !Listening(ctx) {
		return func() {}
	}
	start := c.Now()
	t := c.NewTicker(Every)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C():
				Reportf(ctx, "%s", say(c.Now().Sub(start).Round(time.Second)))
			}
		}
	}()
	return func() {
		t.Stop()
		close(done)
		<-finished
	}
}
