package reconcile

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// departures asks the backends that can say (drivers.DepartureReporter) why the instances
// the record says were made, and that no backend lists any more, went: a cluster's lease
// controller deletes a VM at its lease end whether sbf runs or not. Only those are asked
// about, so a run whose instances are all there asks nothing. What a backend answers is
// kept only for the names asked, and only when it happened after the recorded instance was
// made, to the second (an Event about an earlier VM of the same name says nothing of this
// one). Best
// effort: a backend that cannot answer leaves the sandbox as the listing shows it.
func (e *Engine) departures(ctx context.Context, r *spec.Resolved, rec *state.File, obs *plan.Observed) {
	if rec == nil {
		return
	}
	missing := map[string]map[string]string{} // driver → instance → sandbox
	for name, sr := range rec.Sandboxes {
		if sr == nil || (sr.Phase != state.Running && sr.Phase != state.Stopped) || sr.Driver == "" {
			continue
		}
		instance := plan.InstanceFor(r.WorkspaceID, name, sr, *obs)
		if _, listed := obs.Instances[instance]; listed || obs.Unavailable[sr.Driver] != nil {
			continue
		}
		if missing[sr.Driver] == nil {
			missing[sr.Driver] = map[string]string{}
		}
		missing[sr.Driver][instance] = name
	}
	for driver, sandboxes := range missing {
		drv, err := e.Drivers(driver, r)
		if err != nil {
			continue
		}
		reporter := drivers.CapabilitiesOf(drv).Departures
		if reporter == nil {
			continue
		}
		names := make([]string, 0, len(sandboxes))
		for instance := range sandboxes {
			names = append(names, instance)
		}
		slices.Sort(names)
		found, err := reporter.Departures(ctx, names)
		if err != nil {
			continue
		}
		for _, d := range found {
			name, asked := sandboxes[d.Instance]
			if !asked || d.At.IsZero() {
				continue
			}
			// Whole seconds: an Event's time has no more (one in the second the record was
			// made counts; an earlier VM's Event came before this one's create and boot).
			if made := rec.Sandboxes[name].CreatedAt; made != nil && d.At.Before(made.Truncate(time.Second)) {
				continue
			}
			if prev, ok := obs.Departed[name]; ok && !prev.At.Before(d.At) {
				continue
			}
			if obs.Departed == nil {
				obs.Departed = map[string]drivers.Departure{}
			}
			obs.Departed[name] = d
		}
	}
	e.noteDepartures(ctx, r, obs.Departed)
}

// noteDepartures records each departure in the workspace's history, once however many runs
// and status calls see it: the line is its time, the backend's reason and who removed it.
func (e *Engine) noteDepartures(ctx context.Context, r *spec.Resolved, departed map[string]drivers.Departure) {
	if len(departed) == 0 {
		return
	}
	history, redact := sandbox.WorkspaceHistory(r.Root), sandbox.Redactor(r, e.Env.getenv)
	for _, name := range slices.Sorted(maps.Keys(departed)) {
		d := departed[name]
		ev := departureEvent(name, d)
		same := func(o sandbox.Event) bool {
			return o.Door == ev.Door && o.Tool == ev.Tool && o.InstanceID == ev.InstanceID && o.Time.Equal(ev.Time)
		}
		// The history must not fail the run that saw it.
		_, _ = history.AppendOnce(ctx, ev, redact, same, departureWindow)
	}
}

// departureWindow bounds how far back AppendOnce looks for a departure's line: any line
// written after it ended after the departure, so lines that ended this long before it were
// there already (the slack covers the clocks of the cluster and this host).
const departureWindow = 10 * time.Minute

// departureEvent is the history's line for a departure: door "cluster", tool expire (its
// lease ended it) or delete (anything else), at the time the backend says it happened.
func departureEvent(name string, d drivers.Departure) sandbox.Event {
	tool := "delete"
	if d.Expired {
		tool = "expire"
	}
	detail := d.Reason
	if d.By != "" {
		detail += " by " + d.By
	}
	if d.Message != "" {
		detail += ": " + d.Message
	}
	return sandbox.Event{Time: d.At.UTC(), Door: "cluster", Tool: tool, Sandbox: name, InstanceID: d.Instance,
		Detail: detail}
}
