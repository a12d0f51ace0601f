package snapshots

import (
	"fmt"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// MaxForkChildren bounds how many children one fork makes: each holds a
// VM's memory and counts against the host's cap; an agent asks for them.
const MaxForkChildren = 8

// Fork is what a fork asks for, as its checks see it.
type Fork struct {
	Source string
	Count  int
	// NamePrefix names the children PREFIX-1, PREFIX-2 … (the first free
	// numbers); "": SOURCE-fork.
	NamePrefix string
	TTL        *time.Duration // nil: the source's lease length
}

// ForkChecks decide what a door does not about a fork.
type ForkChecks struct {
	Now     time.Time
	Leases  Leases
	Drivers func(name string, r *spec.Resolved) (drivers.Driver, error)
}

// Check refuses a fork unless the count is within 1 and MaxForkChildren,
// the source holds a live lease and has a VM, its backend forks
// (FORK_UNSUPPORTED naming a clone from a disk snapshot otherwise), the
// lease length is within bounds and the children's names are free; it
// returns those names and the backend's Forker. Nothing is made.
func (c ForkChecks) Check(r *spec.Resolved, rec *state.File, req Fork) ([]string, drivers.Forker, error) {
	if req.Count < 1 || req.Count > MaxForkChildren {
		return nil, nil, coded.New(coded.InvalidArguments, map[string]any{"field": "count", "value": req.Count,
			"min": 1, "max": MaxForkChildren}, "count %d: a fork makes 1 to %d children", req.Count, MaxForkChildren)
	}
	if err := c.Leases.Live(r, rec, req.Source, c.Now); err != nil {
		return nil, nil, err
	}
	src := rec.Sandboxes[req.Source]
	if src == nil || src.Phase.Terminal() || src.Instance == "" {
		return nil, nil, coded.New(coded.InstanceNotFound, map[string]any{"sandbox": req.Source},
			"sandbox %s has no VM to fork yet; run 'sbf up %s' first", req.Source, req.Source)
	}
	if req.TTL != nil && (*req.TTL <= 0 || *req.TTL > r.Config.Lease.MaxTTL.Std()) {
		return nil, nil, c.Leases.TTLInvalid(r, *req.TTL, "a lease lasts longer than zero and at most lease.max_ttl")
	}
	driver := r.Host.ResolveDriver(r.Config.Sandboxes[req.Source].Driver)
	drv, err := c.Drivers(driver, r)
	if err != nil {
		return nil, nil, err
	}
	forker := drivers.CapabilitiesOf(drv).Fork
	if forker == nil {
		return nil, nil, drivers.NoFork(driver, req.Source)
	}
	names, err := forkNames(r, rec, req)
	return names, forker, err
}

// forkNames are PREFIX-N for the Count smallest N no sandbox has.
func forkNames(r *spec.Resolved, rec *state.File, req Fork) ([]string, error) {
	prefix := req.NamePrefix
	if prefix == "" {
		prefix = strings.TrimRight(req.Source[:min(len(req.Source), 40-len("-fork-8"))], "-_") + "-fork"
	}
	var names []string
	for n := 1; len(names) < req.Count; n++ {
		name := fmt.Sprintf("%s-%d", prefix, n)
		if !spec.ValidSandboxName(name) {
			return nil, coded.New(coded.InvalidArguments, map[string]any{"field": "name_prefix",
				"value": coded.Clip(prefix)}, "name prefix %q makes %q, which is not a sandbox name (letters, digits, "+
				"'-' and '_', starting with a letter or digit, at most 40 in all)", coded.Clip(prefix), coded.Clip(name))
		}
		if _, declared := r.Config.Sandboxes[name]; declared || rec.Sandboxes[name] != nil {
			continue
		}
		names = append(names, name)
	}
	return names, nil
}
