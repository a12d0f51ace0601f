package sandbox

import (
	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/internal/coded"
)

// EgressLog returns the last tail decisions of the sandbox's egress proxy,
// oldest first: what the guest tried to reach and whether it was let
// through. A sandbox that never had a policy has an empty log.
func (t *Target) EgressLog(tail int) ([]egress.Entry, error) {
	drv, err := t.Driver()
	if err != nil {
		return nil, err
	}
	l, ok := drv.(drivers.EgressLogger)
	if !ok {
		return nil, coded.New(coded.PolicyUnsupported, map[string]any{"driver": t.DriverName},
			"the %s driver enforces no network policy, so it keeps no egress log", t.DriverName)
	}
	entries, err := egress.ReadLog(l.EgressLog(t.Instance), tail)
	if entries == nil && err == nil {
		entries = []egress.Entry{}
	}
	return entries, err
}
