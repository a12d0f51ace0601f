package executor

import (
	"github.com/sandboxforge/sbf/reconcile/plan"
)

// Outcome is what carrying out a plan did, action by action: the doors
// count from it and never count a failed change as done.
type Outcome struct {
	Done   []plan.Action
	Failed []Failure
	// NotAttempted are the actions a failure before them in their
	// sandbox's chain (or a cancelled run) left undone.
	NotAttempted []plan.Action
	// Leases are the lease ends recorded in the state file.
	Leases []plan.LeaseRenewal
}

// Failure is one action that failed, with why.
type Failure struct {
	Action plan.Action
	Err    error
}

// OK reports whether every planned action was carried out.
func (o *Outcome) OK() bool { return len(o.Failed) == 0 && len(o.NotAttempted) == 0 }

// DoneSummary counts what was done the way a plan's summary counts what
// was planned.
func (o *Outcome) DoneSummary() plan.Summary { return plan.Count(o.Done) }

// FailedSandbox reports whether an action of the sandbox failed.
func (o *Outcome) FailedSandbox(name string) bool {
	for _, f := range o.Failed {
		if f.Action.Sandbox == name {
			return true
		}
	}
	return false
}

// OutcomeReport is an outcome as `--json` gives it.
type OutcomeReport struct {
	Done         plan.Summary        `json:"done"`
	Failed       []FailureReport     `json:"failed"`
	NotAttempted []plan.Change       `json:"not_attempted"`
	Leases       []plan.LeaseRenewal `json:"leases_recorded"`
}

// FailureReport is one failed action as data.
type FailureReport struct {
	plan.Change
	Error string `json:"error"`
}

// Report gives the outcome as data (empty lists, never null).
func (o *Outcome) Report() OutcomeReport {
	r := OutcomeReport{Done: o.DoneSummary(), Failed: []FailureReport{}, NotAttempted: []plan.Change{},
		Leases: append([]plan.LeaseRenewal{}, o.Leases...)}
	for _, f := range o.Failed {
		r.Failed = append(r.Failed, FailureReport{Change: f.Action.Change(), Error: f.Err.Error()})
	}
	for _, a := range o.NotAttempted {
		r.NotAttempted = append(r.NotAttempted, a.Change())
	}
	return r
}

// step is what became of one action of a plan being carried out.
type step struct {
	ran bool
	err error
}

// outcomeOf reads the steps (one per action of p, written by the chain
// that ran it) back as an outcome, in plan order.
func outcomeOf(p *plan.Plan, steps []step, leases []plan.LeaseRenewal) Outcome {
	o := Outcome{Leases: leases}
	for i, a := range p.Actions {
		switch s := steps[i]; {
		case !s.ran:
			o.NotAttempted = append(o.NotAttempted, a)
		case s.err != nil:
			o.Failed = append(o.Failed, Failure{Action: a, Err: s.err})
		default:
			o.Done = append(o.Done, a)
		}
	}
	return o
}
