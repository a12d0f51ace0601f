package spec

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// ClampLease keeps a lease within the policy: it ends at most max_lifetime
// after it was acquired, and (when now is known) it was not acquired in
// the future nor ends more than max_lifetime from now. sbf only writes
// leases inside these bounds; a hand-edited one outside them is pulled
// back rather than keeping a VM alive for years. why says what moved ("" when
// nothing did).
func ClampLease(l LeaseRecord, pol Lease, now time.Time) (out LeaseRecord, why string) {
	out = l
	life := pol.MaxLifetime.Std()
	if !now.IsZero() && out.AcquiredAt.After(now.Add(writtenSince)) {
		out.AcquiredAt = now.UTC().Truncate(time.Second)
		why = fmt.Sprintf("acquired_at %s is in the future", stamp(l.AcquiredAt))
	}
	// The bound is described only when it moves the lease: every load
	// clamps every lease, and almost none moves.
	limit, fromNow := time.Time{}, false
	if !out.AcquiredAt.IsZero() {
		limit = out.AcquiredAt.Add(life)
	}
	if !now.IsZero() && (limit.IsZero() || now.Add(life).Before(limit)) {
		limit, fromNow = now.Add(life), true
	}
	if !limit.IsZero() && out.ExpiresAt.After(limit) {
		out.ExpiresAt = limit.UTC()
		if why != "" {
			why += "; "
		}
		bound := fmt.Sprintf("%s after acquired_at %s", pol.MaxLifetime, stamp(out.AcquiredAt))
		if fromNow {
			bound = fmt.Sprintf("%s from now", pol.MaxLifetime)
		}
		why += fmt.Sprintf("expires_at %s is past lease.max_lifetime (%s)", stamp(l.ExpiresAt), bound)
	}
	if why != "" {
		why += fmt.Sprintf("; the lease ends at %s instead", stamp(out.ExpiresAt))
	}
	return out, why
}

// writtenSince is how far in the future a lease may have been acquired
// without being a hand edit: another sbf run on this host writes leases
// at its own "now", moments after this run read its clock.
const writtenSince = time.Minute

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// clampLeases applies ClampLease to every lease, warning where one moved.
func (r *Resolved) clampLeases(now time.Time) {
	for _, name := range slices.Sorted(maps.Keys(r.Config.Leases)) {
		l, why := ClampLease(r.Config.Leases[name], r.Config.Lease, now)
		if why == "" {
			continue
		}
		r.Config.Leases[name] = l
		r.Warnings = append(r.Warnings, r.errorAt("leases."+name+".expires_at", why))
	}
}
