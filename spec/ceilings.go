package spec

import (
	"fmt"
	"reflect"
	"time"

	"github.com/sandboxforge/sbf/internal/policy"
)

// Ceiling is one of the operator's limits as it applies to a workspace:
// the bound, where it came from, and the value in effect.
type Ceiling struct {
	Key string `json:"key"` // the policy key: max_ttl
	// Ceiling is the operator's bound; null when there is none and the
	// workspace's value applies.
	Ceiling any    `json:"ceiling"`
	Source  string `json:"source"` // where the bound came from
	Value   any    `json:"value"`  // in effect
	// ValueFrom is the layer that set the value in effect ("defaults", a
	// file, "request_overrides"), or "ceiling".
	ValueFrom string `json:"value_from"`
}

// SourceNoCeiling is a lease limit the operator left to the workspace.
const SourceNoCeiling = "none: the workspace decides"

// FromCeiling is Ceiling.ValueFrom when the ceiling is the value.
const FromCeiling = "ceiling"

type number interface{ ~int | ~int64 }

// applyCeilings holds the lease limits to the operator's ceilings: the
// policy's and the values the global config's [lease] sets, the smaller
// of each. A value set by a workspace layer (committed, local, managed or
// request) above its ceiling is lowered to it with a warning at its
// position rather than refused, so a committed spec stays usable on a
// host with a lower ceiling; a key no workspace layer sets takes the
// ceiling. Lease lengths the lowered limits no longer allow are lowered
// with them. Requests for a length (a TTL, an extension) are checked
// against the result and stay TTL_INVALID past it.
func (r *Resolved) applyCeilings(c policy.Ceilings, layers []*layer) {
	c = c.Defaulted()
	operatorLease(layers, &c)
	lease := &r.Config.Lease
	r.Ceilings = []Ceiling{
		holdTo(r, "max_instances", &lease.MaxInstances, c.MaxInstances.Value, c.MaxInstances.Source),
		holdTo(r, "max_ttl", &lease.MaxTTL, Duration(c.MaxTTL.Value), c.MaxTTL.Source),
		holdTo(r, "max_lifetime", &lease.MaxLifetime, Duration(c.MaxLifetime.Value), c.MaxLifetime.Source),
		serverCeiling("max_output_bytes", c.MaxOutputBytes),
		serverCeiling("max_copy_bytes", c.MaxCopyBytes),
	}
	// A length past a limit the ceiling set is lowered to it; one past a
	// limit the workspace set itself stays a mistake in the spec, which
	// crossCheck reports.
	lower := func(path string, d *Duration, key string, bound Duration) bool {
		row, _ := r.CeilingOf(key)
		if *d <= bound || row.ValueFrom != FromCeiling {
			return false
		}
		r.Warnings = append(r.Warnings, r.errorAt(path, fmt.Sprintf(
			"%s is longer than lease.%s (%s, the operator's ceiling): %s applies", *d, key, bound, bound)))
		*d = bound
		return true
	}
	if lower("lease.max_ttl", &lease.MaxTTL, "max_lifetime", lease.MaxLifetime) {
		for i := range r.Ceilings {
			if r.Ceilings[i].Key == "max_ttl" {
				r.Ceilings[i].Value, r.Ceilings[i].ValueFrom = lease.MaxTTL, FromCeiling
			}
		}
	}
	lower("lease.default_ttl", &lease.DefaultTTL, "max_ttl", lease.MaxTTL)
	lower("vm.ttl", &r.Config.VM.TTL, "max_ttl", lease.MaxTTL)
	for _, name := range r.names {
		sb := r.Config.Sandboxes[name]
		if r.origin("sandboxes."+name+".ttl") != nil {
			lower("sandboxes."+name+".ttl", &sb.TTL, "max_ttl", lease.MaxTTL)
		} else if row, _ := r.CeilingOf("max_ttl"); sb.TTL > lease.MaxTTL && row.ValueFrom == FromCeiling {
			sb.TTL = lease.MaxTTL // inherited from vm.ttl, which said so
		}
		r.Config.Sandboxes[name] = sb
	}
}

// holdTo keeps *v at or below ceiling (none when ≤ 0) and says how.
func holdTo[T number](r *Resolved, key string, v *T, ceiling T, source string) Ceiling {
	path := "lease." + key
	row := Ceiling{Key: key, Source: source, ValueFrom: SourceDefaults}
	l := r.origin(path)
	if l != nil {
		row.ValueFrom = l.source
	}
	if ceiling <= 0 {
		row.Source, row.Value = SourceNoCeiling, *v
		return row
	}
	row.Ceiling = ceiling
	switch {
	case l == nil || l.global:
		*v, row.ValueFrom = ceiling, FromCeiling
	case *v > ceiling:
		why := fmt.Sprintf("%v is above the operator's ceiling %v (%s): %v applies", *v, ceiling, source, ceiling)
		r.Warnings = append(r.Warnings, r.errorAt(path, why))
		*v, row.ValueFrom = ceiling, FromCeiling
	}
	row.Value = *v
	return row
}

// serverCeiling is a limit no workspace key sets: the ceiling applies.
func serverCeiling(key string, c policy.Ceiling[int64]) Ceiling {
	return Ceiling{Key: key, Ceiling: c.Value, Source: c.Source, Value: c.Value, ValueFrom: FromCeiling}
}

// operatorLease lowers the ceilings to the lease limits the global
// config's [lease] sets (its newest file winning, as in the merge): a
// value the operator wrote is the operator's.
func operatorLease(layers []*layer, c *policy.Ceilings) {
	var lease Lease
	from := map[string]string{}
	for _, l := range layers {
		tree, _ := l.tree["lease"].(map[string]any)
		if !l.global || tree == nil {
			continue
		}
		assign(tree, reflect.ValueOf(&lease).Elem())
		for _, key := range []string{"max_instances", "max_ttl", "max_lifetime"} {
			if _, ok := tree[key]; ok {
				from[key] = "global config " + l.source + " [lease] " + key
			}
		}
	}
	if src, ok := from["max_instances"]; ok {
		lowerTo(&c.MaxInstances, lease.MaxInstances, src)
	}
	if src, ok := from["max_ttl"]; ok {
		lowerTo(&c.MaxTTL, lease.MaxTTL.Std(), src)
	}
	if src, ok := from["max_lifetime"]; ok {
		lowerTo(&c.MaxLifetime, lease.MaxLifetime.Std(), src)
	}
}

func lowerTo[T int | time.Duration](c *policy.Ceiling[T], v T, source string) {
	if v > 0 && (c.Value <= 0 || v < c.Value) {
		c.Value, c.Source = v, source
	}
}

// CeilingOf is the resolved ceiling of a policy key (false when unknown).
func (r *Resolved) CeilingOf(key string) (Ceiling, bool) {
	for _, c := range r.Ceilings {
		if c.Key == key {
			return c, true
		}
	}
	return Ceiling{}, false
}
