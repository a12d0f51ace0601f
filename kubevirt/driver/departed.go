package driver

import (
	"context"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
)

// departureReasons are the lease controller's Events on a VM it deleted, and whether the
// lease was what ended it.
var departureReasons = map[string]bool{ReasonLeaseExpired: true, ReasonNoLease: true, ReasonOverOwnerCeiling: false}

// maxDepartureLookups bounds the Event lists one call makes: the engine asks only about
// the instances it recorded as made and no longer finds, a workspace's few.
const maxDepartureLookups = 32

// maxDepartureMessage bounds what an Event's message brings into sbf's status and history.
const maxDepartureMessage = 512

// Departures reports why the named instances' VMs went, when the lease controller deleted
// them: the newest of its Events on each (LeaseExpired, NoLease, OverOwnerCeiling), read
// with a field selector on the VM's name, so the cost is one list per name asked. The
// Events are what the cluster says (kept an hour by default: the API server's --event-ttl);
// the engine decides what they mean. A name with no such Event is left out.
func (d *Driver) Departures(ctx context.Context, names []string) ([]drivers.Departure, error) {
	if err := d.ready(); err != nil {
		return nil, err
	}
	var out []drivers.Departure
	for _, name := range names[:min(len(names), maxDepartureLookups)] {
		var events corev1.EventList
		err := d.c.List(ctx, &events, client.InNamespace(d.set.Namespace),
			client.MatchingFields{"involvedObject.kind": "VirtualMachine", "involvedObject.name": ObjectName(name)})
		if err != nil {
			return out, d.apiError("listing the Events of VirtualMachine "+ObjectName(name), err)
		}
		if dep, ok := departureOf(name, events.Items); ok {
			out = append(out, dep)
		}
	}
	return out, nil
}

// departureOf is the newest Event the lease controller left on instance's VM when it
// deleted it.
func departureOf(instance string, events []corev1.Event) (drivers.Departure, bool) {
	var found *corev1.Event
	for i := range events {
		ev := &events[i]
		_, known := departureReasons[ev.Reason]
		if !known || ev.ReportingController != "sandboxforge.dev/"+ControllerComponent ||
			ev.InvolvedObject.APIVersion != kv.GroupVersion.String() {
			continue
		}
		if found == nil || eventTime(ev).After(eventTime(found)) {
			found = ev
		}
	}
	if found == nil {
		return drivers.Departure{}, false
	}
	by := ControllerComponent
	if found.ReportingInstance != "" {
		by += " (replica " + clip(found.ReportingInstance, 253) + ")"
	}
	return drivers.Departure{Instance: instance, Reason: found.Reason, Expired: departureReasons[found.Reason],
		By: by, Message: clip(found.Message, maxDepartureMessage), At: eventTime(found).UTC()}, true
}

// eventTime is when an Event says its last occurrence was.
func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.FirstTimestamp.Time
}

// clip cuts s to n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

var _ drivers.DepartureReporter = (*Driver)(nil)
