package reconcile

import "context"

type eventsKey struct{}

// WithEvents has the runs started with the returned context report their
// steps to report as well as to the engine's Events and to every listener
// an outer WithEvents of ctx named: one caller's progress (an MCP call
// with a progress token) and its log lines on an engine many callers share.
func WithEvents(ctx context.Context, report func(Event)) context.Context {
	if outer, _ := ctx.Value(eventsKey{}).(func(Event)); outer != nil {
		inner := report
		report = func(ev Event) {
			outer(ev)
			inner(ev)
		}
	}
	return context.WithValue(ctx, eventsKey{}, report)
}

// eventsOf is where a run over the workspace at root reports its steps:
// the engine's Events and the caller's, each optional, each event naming
// the workspace.
func (e *Engine) eventsOf(ctx context.Context, root string) func(Event) {
	caller, _ := ctx.Value(eventsKey{}).(func(Event))
	if caller == nil && e.Events == nil {
		return nil
	}
	return func(ev Event) {
		ev.Workspace = root
		if e.Events != nil {
			e.Events(ev)
		}
		if caller != nil {
			caller(ev)
		}
	}
}
