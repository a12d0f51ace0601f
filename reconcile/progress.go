package reconcile

import "context"

type eventsKey struct{}

// WithEvents has the runs started with the returned context report their
// steps to report as well as to the engine's Events: one caller's progress
// (an MCP call with a progress token) on an engine many callers share.
func WithEvents(ctx context.Context, report func(Event)) context.Context {
	return context.WithValue(ctx, eventsKey{}, report)
}

// eventsOf is where a run reports its steps: the engine's Events and the
// caller's, each optional.
func (e *Engine) eventsOf(ctx context.Context) func(Event) {
	caller, _ := ctx.Value(eventsKey{}).(func(Event))
	switch {
	case caller == nil:
		return e.Events
	case e.Events == nil:
		return caller
	}
	return func(ev Event) {
		e.Events(ev)
		caller(ev)
	}
}
