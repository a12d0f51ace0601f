package leases

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
)

// Class is what taking over one v1 lease means.
type Class string

const (
	// Import: an active lease (creating or running, expires_at after now)
	// whose VM exists and whose workspace is on this host. Its VM becomes
	// the ad-hoc sandbox named by the v1 instance_id, leased until the
	// same expires_at.
	Import Class = "import"
	// Leaked: v1 is done with the lease (destroyed, expired, error, or
	// active with expires_at passed) but its VM still exists.
	Leaked Class = "leaked"
	// Unseen: the lease's backend cannot be asked whether its VM exists
	// (unavailable here, or it cannot list names sbf did not make).
	Unseen Class = "unseen"
	// Skip: something about the lease stops sbf taking it over; Reason
	// says what.
	Skip Class = "skip"
	// Gone: the lease's VM no longer exists; nothing to do.
	Gone Class = "gone"
)

// rank orders the report: what will change first.
var rank = map[Class]int{Import: 0, Leaked: 1, Unseen: 2, Skip: 3, Gone: 4}

// v1 lease statuses (v1 service.py ACTIVE_STATUSES, TERMINAL_STATUSES;
// "error" is a failed create and in neither set).
const (
	statusCreating  = "creating"
	statusRunning   = "running"
	statusDestroyed = "destroyed"
	statusExpired   = "expired"
	statusError     = "error"
)

// Inventory is what the backends list, under any name.
type Inventory struct {
	// Listed holds, per sbf driver, the names of every instance it lists.
	Listed map[string]map[string]bool
	// Unlisted holds, per sbf driver, why it was not listed.
	Unlisted map[string]string
	// Held holds, per sbf driver, the instances sbf already keeps (its
	// host index): VM name → which sandbox of which workspace. A VM sbf
	// holds is never adopted again nor deleted as leaked, though v1's row
	// still names it.
	Held map[string]map[string]string
}

// Options are what classification depends on besides the leases.
type Options struct {
	Now time.Time
	// Drivers maps v1's backend names (backend_name; v1's SANDBOX_BACKEND
	// takes lima and hyperv) to the sbf drivers that run the same VMs: the
	// backends' registrations say which (drivers.V1Backends).
	Drivers map[string]string
	// DirExists says whether a workspace root is a folder on this host;
	// nil: every root is.
	DirExists func(path string) bool
}

// Entry is one lease and what to do with it.
type Entry struct {
	Lease
	Class  Class  `json:"class"`
	Driver string `json:"driver,omitempty"` // the sbf driver for the lease's backend
	Reason string `json:"reason"`
}

// Report is every lease, classified: by class (import, leaked, unseen,
// skip, gone), then instance_id.
type Report struct {
	Entries []Entry       `json:"leases"`
	Counts  map[Class]int `json:"counts"`
}

// Classify decides what taking over each lease means. It reads nothing but
// its arguments (and DirExists).
func Classify(leases []Lease, inv Inventory, o Options) Report {
	dm := o.Drivers
	entries := make([]Entry, 0, len(leases))
	for _, l := range leases {
		entries = append(entries, classify(l, inv, dm, o))
	}
	// A VM that two leases name is nobody's to adopt or delete: one lease
	// could be adopting what the other would delete.
	byVM := map[string][]int{}
	for i, e := range entries {
		if e.Class == Import || e.Class == Leaked {
			k := e.Driver + "\x00" + e.BackendInstance
			byVM[k] = append(byVM[k], i)
		}
	}
	for _, idx := range byVM {
		if len(idx) < 2 {
			continue
		}
		ids := make([]string, len(idx))
		for j, i := range idx {
			ids[j] = entries[i].InstanceID
		}
		slices.Sort(ids)
		for _, i := range idx {
			entries[i].Class = Skip
			entries[i].Reason = fmt.Sprintf("VM %s is named by %d v1 leases (%s): left alone",
				entries[i].BackendInstance, len(ids), strings.Join(ids, ", "))
		}
	}
	slices.SortFunc(entries, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(rank[a.Class], rank[b.Class]), strings.Compare(a.InstanceID, b.InstanceID))
	})
	counts := map[Class]int{}
	for c := range maps.Keys(rank) {
		counts[c] = 0
	}
	for _, e := range entries {
		counts[e.Class]++
	}
	return Report{Entries: entries, Counts: counts}
}

func classify(l Lease, inv Inventory, dm map[string]string, o Options) Entry {
	e := Entry{Lease: l}
	set := func(c Class, format string, args ...any) Entry {
		e.Class, e.Reason = c, fmt.Sprintf(format, args...)
		return e
	}
	driver, ok := dm[strings.ToLower(strings.TrimSpace(l.Backend))]
	if !ok {
		return set(Skip, "v1 backend %q has no sbf driver (v1's backends are lima and hyperv)", l.Backend)
	}
	e.Driver = driver
	vm := l.BackendInstance
	if vm == "" {
		return set(Skip, "the lease names no VM (backend_instance_name and lima_name are empty)")
	}
	if _, _, sbfs := drivers.ParseInstanceName(vm); sbfs {
		return set(Skip, "VM %s has an sbf instance name, not one v1 makes (agent-…): left alone", vm)
	}
	listed, ok := inv.Listed[driver]
	if !ok {
		why := inv.Unlisted[driver]
		if why == "" {
			why = "it was not listed"
		}
		return set(Unseen, "whether VM %s still exists is unknown: the %s driver cannot say (%s)", vm, driver, why)
	}
	if !listed[vm] {
		return set(Gone, "VM %s no longer exists in %s", vm, driver)
	}
	if holder, ok := inv.Held[driver][vm]; ok {
		return set(Skip, "sbf already keeps VM %s (%s): imported before, or made by sbf", vm, holder)
	}
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch l.Status {
	case statusDestroyed:
		return set(Leaked, "v1 destroyed the lease but VM %s still exists", vm)
	case statusExpired:
		return set(Leaked, "v1 marked the lease expired but VM %s still exists (v1's lazy expiry marks a lease it finds "+
			"expired without deleting its VM, and a failed sweeper delete is never retried)", vm)
	case statusError:
		return set(Leaked, "v1's create failed (status error) and left VM %s behind", vm)
	case statusCreating, statusRunning:
	default:
		return set(Skip, "unknown v1 status %q", l.Status)
	}
	if l.ExpiresAt.IsZero() {
		return set(Skip, "the lease's expiry cannot be read (%s)", strings.Join(l.Problems, "; "))
	}
	if !l.ExpiresAt.After(o.Now) {
		return set(Leaked, "the lease ran out at %s but VM %s still exists (v1's sweeper deletes it only while v1 runs)",
			at(l.ExpiresAt), vm)
	}
	switch root := l.WorkspaceRoot; {
	case !spec.ValidSandboxName(l.InstanceID):
		return set(Skip, "instance_id %q cannot be an sbf sandbox name", l.InstanceID)
	case root == "":
		return set(Skip, "the lease has no workspace_root (v1 made it without one), so sbf has no workspace to "+
			"adopt VM %s into", vm)
	case !filepath.IsAbs(root):
		return set(Skip, "workspace_root %q is not an absolute path", root)
	case o.DirExists != nil && !o.DirExists(root):
		return set(Skip, "workspace_root %s is not a folder on this host", root)
	}
	reason := fmt.Sprintf("active until %s: VM %s becomes sandbox %s of %s",
		at(l.ExpiresAt), vm, l.InstanceID, l.WorkspaceRoot)
	if l.Status == statusCreating {
		reason += " (v1 had not finished creating it)"
	}
	e.Class, e.Reason = Import, reason
	return e
}
