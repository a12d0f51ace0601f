package sandbox

import (
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/internal/coded"
)

// EgressLog returns the last tail decisions of the sandbox's egress proxy
// and of its host guard (refused connections to this host's own
// services), oldest first: what the guest tried to reach and whether it
// was let through. A sandbox that never had a policy nor tried the host
// has an empty log.
func (t *Target) EgressLog(tail int) ([]egress.Entry, error) {
	drv, err := t.Driver()
	if err != nil {
		return nil, err
	}
	caps := drivers.CapabilitiesOf(drv)
	l := caps.EgressLog
	if l == nil {
		return nil, coded.New(coded.PolicyUnsupported, map[string]any{"driver": t.DriverName},
			"the %s driver enforces no network policy, so it keeps no egress log", t.DriverName)
	}
	entries, err := egress.ReadLog(l.EgressLog(t.Instance), tail)
	if g := caps.GuardLog; g != nil && err == nil {
		var refused []egress.Entry
		if refused, err = egress.ReadLog(g.GuardLog(t.Instance), tail); len(refused) > 0 {
			entries = append(entries, refused...)
			slices.SortStableFunc(entries, func(a, b egress.Entry) int { return a.Time.Compare(b.Time) })
			if tail > 0 {
				entries = entries[max(0, len(entries)-tail):]
			}
		}
	}
	if entries == nil && err == nil {
		entries = []egress.Entry{}
	}
	return entries, err
}
