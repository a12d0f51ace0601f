package executor

import (
	"context"
	"errors"
)

// ErrInterrupted is a run told to stop (Ctrl-C): the steps in flight
// finished and were recorded, the rest were not started.
var ErrInterrupted = errors.New("interrupted: the steps in flight finished, the rest were not started")

type stopKey struct{}

// WithStop makes a run stop starting steps once stop is closed, while the
// steps in flight go on with ctx (cancel ctx itself to cut those short):
// the first Ctrl-C of `sbf apply`, which must not leave a half-made VM.
func WithStop(ctx context.Context, stop <-chan struct{}) context.Context {
	return context.WithValue(ctx, stopKey{}, stop)
}

// stopped says whether the run was told to stop starting steps.
func stopped(ctx context.Context) bool {
	stop, _ := ctx.Value(stopKey{}).(<-chan struct{})
	if stop == nil {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// stopChan is the run's stop channel (nil, which never fires, when none).
func stopChan(ctx context.Context) <-chan struct{} {
	stop, _ := ctx.Value(stopKey{}).(<-chan struct{})
	return stop
}
