package reconcile

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Edit changes the desired state: it rewrites the managed overrides
// document. Front doors (CLI commands, MCP tools) express themselves as
// edits; the engine plans with the edit applied, and writes it only when
// the plan is carried out.
type Edit func(m *spec.Managed, c EditContext) error

// EditContext is what an edit may consult.
type EditContext struct {
	Resolved *spec.Resolved // the desired state before the edit
	State    *state.File    // what sbf last recorded
	Now      time.Time
}

// leaseTTL is how long a sandbox's lease lasts when acquired.
func leaseTTL(r *spec.Resolved, name string) time.Duration {
	if ttl := r.Config.Sandboxes[name].TTL.Std(); ttl > 0 {
		return ttl
	}
	return r.Config.Lease.DefaultTTL.Std()
}

// heldLease reads a sandbox's lease from the document within the lease
// policy, so an edit never builds on (or writes back) a hand-edited end
// past it.
func heldLease(m *spec.Managed, r *spec.Resolved, name string, now time.Time) (spec.LeaseRecord, bool) {
	cur, held := m.Lease(name)
	if held {
		cur, _ = spec.ClampLease(cur, r.Config.Lease, now)
	}
	return cur, held
}

// renew acquires a lease, or moves a live one to now+ttl when that is
// later; it never shortens a lease someone extended.
func renew(cur spec.LeaseRecord, held bool, ttl time.Duration, now time.Time) spec.LeaseRecord {
	now = now.Truncate(time.Second) // leases read better, and compare as v1's did, in whole seconds
	if !held || !now.Before(cur.ExpiresAt) {
		return spec.LeaseRecord{AcquiredAt: now.UTC(), ExpiresAt: now.Add(ttl).UTC()}
	}
	if next := now.Add(ttl); next.After(cur.ExpiresAt) {
		cur.ExpiresAt = next.UTC()
	}
	return cur
}

// renewEdit is what `sbf apply` does to leases: it acquires or renews the
// lease of every sandbox it converges. Without targets those are the
// sandboxes declared in files people edit; ad-hoc sandboxes (from `sbf up
// NAME` or MCP) keep their own leases, so an expired one stays expired.
func renewEdit(targets []string) Edit {
	return func(m *spec.Managed, c EditContext) error {
		r, now := c.Resolved, c.Now
		names := targets
		if len(names) == 0 {
			names = personal(r)
		}
		for _, name := range names {
			if _, ok := r.Config.Sandboxes[name]; !ok {
				return notDeclared(r, name)
			}
			cur, held := heldLease(m, r, name, now)
			m.SetLease(name, renew(cur, held, leaseTTL(r, name), now))
		}
		// A lease outliving its sandbox's declaration would bring the
		// sandbox back if someone declared it again; apply forgets it.
		for name := range r.Config.Leases {
			if _, declared := r.Config.Sandboxes[name]; !declared {
				m.DropLease(name)
			}
		}
		return nil
	}
}

// upEdit declares the named sandboxes that no file declares (ad hoc, with
// optional [vm] overrides) and acquires their leases for ttl (zero: each
// sandbox's own). Without names it does so for every sandbox the files
// declare.
func upEdit(names []string, ttl time.Duration, keys map[string]any) Edit {
	return func(m *spec.Managed, c EditContext) error {
		r, now := c.Resolved, c.Now
		if len(names) == 0 {
			names = personal(r)
		}
		if ttl > r.Config.Lease.MaxTTL.Std() || ttl < 0 {
			return ttlInvalid(r, ttl, "", "a lease may not be longer than lease.max_ttl")
		}
		for _, name := range names {
			if !spec.ValidSandboxName(name) {
				return coded.New(coded.ConfigInvalid, map[string]any{"sandbox": name},
					"%q is not a valid sandbox name (letters, digits, '-' and '_', starting and ending with a letter or digit)", name)
			}
			if _, declared := r.Config.Sandboxes[name]; !declared || r.AdHoc[name] {
				m.Declare(name, keys)
			}
			d := ttl
			if d == 0 {
				d = leaseTTL(r, name)
			}
			cur, held := heldLease(m, r, name, now)
			m.SetLease(name, renew(cur, held, d, now))
		}
		return nil
	}
}

// destroyEdit drops the named sandboxes' leases (every sandbox's when
// names is empty) and forgets ad-hoc declarations.
func destroyEdit(names []string) Edit {
	return func(m *spec.Managed, c EditContext) error {
		r := c.Resolved
		if len(names) == 0 {
			names = sortedNames(r)
		}
		for _, name := range names {
			if _, declared := r.Config.Sandboxes[name]; !declared && !recorded(r, c.State, name) {
				return notDeclared(r, name)
			}
			m.DropLease(name)
			if r.AdHoc[name] {
				m.Undeclare(name)
			}
		}
		return nil
	}
}

// extendEdit moves a live lease's end by `by`, within [lease] max_ttl per
// extension and max_lifetime from acquisition.
func extendEdit(name string, by time.Duration, asGiven string) Edit {
	return func(m *spec.Managed, c EditContext) error {
		r, now := c.Resolved, c.Now
		if _, ok := r.Config.Sandboxes[name]; !ok {
			return notDeclared(r, name)
		}
		cur, held := heldLease(m, r, name, now)
		if !held {
			return coded.New(coded.InstanceTerminal, map[string]any{"sandbox": name, "status": "destroyed"},
				"sandbox %s holds no lease; run 'sbf up %s' to acquire one", name, name)
		}
		if !now.Before(cur.ExpiresAt) {
			return coded.New(coded.InstanceTerminal, map[string]any{"sandbox": name, "status": "expired"},
				"sandbox %s's lease expired at %s; run 'sbf up %s' to acquire a new one", name,
				cur.ExpiresAt.UTC().Format(time.RFC3339), name)
		}
		pol := r.Config.Lease
		if by <= 0 || by > pol.MaxTTL.Std() {
			return ttlInvalid(r, by, asGiven, "each extension must be longer than zero and at most lease.max_ttl")
		}
		next := cur.ExpiresAt.Add(by)
		if limit := cur.AcquiredAt.Add(pol.MaxLifetime.Std()); next.After(limit) {
			return ttlInvalid(r, by, asGiven, fmt.Sprintf("the lease would end at %s, past lease.max_lifetime (%s after %s)",
				next.UTC().Format(time.RFC3339), pol.MaxLifetime, cur.AcquiredAt.UTC().Format(time.RFC3339)))
		}
		cur.ExpiresAt = next.UTC()
		m.SetLease(name, cur)
		return nil
	}
}

// ttlInvalid refuses a lease length: asGiven, when the request wrote it
// down, is what the message quotes (a person who typed 48h reads 48h, not
// 2d).
func ttlInvalid(r *spec.Resolved, ttl time.Duration, asGiven, why string) *coded.Error {
	pol := r.Config.Lease
	details := map[string]any{
		"ttl_minutes":          ttl.Minutes(),
		"default_ttl_minutes":  pol.DefaultTTL.Std().Minutes(),
		"max_ttl_minutes":      pol.MaxTTL.Std().Minutes(),
		"max_lifetime_minutes": pol.MaxLifetime.Std().Minutes(),
	}
	var ceilings []string
	for _, key := range []string{"max_ttl", "max_lifetime"} {
		if c, ok := r.CeilingOf(key); ok && c.ValueFrom == spec.FromCeiling {
			details[key+"_source"] = c.Source // the operator's ceiling: no workspace can raise it
			ceilings = append(ceilings, fmt.Sprintf("%s is the operator's ceiling (%s)", key, c.Source))
		}
	}
	if len(ceilings) > 0 {
		why += "; " + strings.Join(ceilings, "; ")
	}
	shown := asGiven
	if shown == "" {
		shown = spec.Duration(ttl).String()
	}
	if shown == "" { // a Duration of zero prints as nothing, and "TTL  is invalid" says no value was given
		shown = "0m"
	}
	return coded.New(coded.TTLInvalid, details, "TTL %s is invalid: %s (max_ttl %s, max_lifetime %s)",
		shown, why, pol.MaxTTL, pol.MaxLifetime)
}

func notDeclared(r *spec.Resolved, name string) *coded.Error {
	return coded.New(coded.InstanceNotFound, map[string]any{"sandbox": name, "declared": sortedNames(r)},
		"sandbox %q is not declared in this workspace (declared: %v)", name, sortedNames(r))
}

// personal lists the sandboxes declared by files people edit.
func personal(r *spec.Resolved) []string {
	var names []string
	for _, name := range sortedNames(r) {
		if !r.AdHoc[name] {
			names = append(names, name)
		}
	}
	return names
}

func sortedNames(r *spec.Resolved) []string {
	names := make([]string, 0, len(r.Config.Sandboxes))
	for n := range r.Config.Sandboxes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// layersEdit sets the in-guest layers of an ad-hoc sandbox (the runtime
// and services keys prepare_workspace asks for); the lease is untouched,
// and a sandbox the files declare is left to the files.
func layersEdit(name string, keys map[string]any) Edit {
	return func(m *spec.Managed, c EditContext) error {
		if !c.Resolved.AdHoc[name] {
			return nil
		}
		set := map[string]any{"services": []any{}}
		maps.Copy(set, keys)
		m.Declare(name, set)
		return nil
	}
}
