package reconcile

import (
	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/executor"
)

// The executor (reconcile/executor) carries a plan out; the doors know its
// results by these names.
type (
	Driver        = drivers.Driver
	Event         = executor.Event
	Outcome       = executor.Outcome
	OutcomeReport = executor.OutcomeReport
	FailureReport = executor.FailureReport
	Failure       = executor.Failure
)

// ErrInterrupted is a run stopped by its first interrupt (WithStop).
var ErrInterrupted = executor.ErrInterrupted

// WithStop is executor.WithStop: a run given it stops starting steps once
// stop closes.
var WithStop = executor.WithStop
