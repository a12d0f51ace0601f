// Package v1import takes over SandboxForge v1: it reads v1's lease
// database (read-only), asks the backends which of v1's VMs still exist,
// decides what each lease means (TakeInventory), says what taking them
// over would do (Inventory.Plan) and does it through the engine (Run):
// the VM of each active lease is adopted as an ad-hoc sandbox of its
// workspace, and the VMs v1 leaked are deleted when asked.
package v1import

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/v1import/leases"
)

// Source is the v1 installation to take over.
type Source struct {
	DB string // v1's lease database (its leases.db)
	// Drivers maps v1's backend names to sbf drivers; nil: the linked backends' registrations
	// (drivers.V1Backends).
	Drivers map[string]string
}

// Options say what Plan and Run do besides adopting active leases' VMs.
type Options struct {
	// DeleteLeaked deletes the VMs v1 leaked (its lease is over but the VM
	// exists).
	DeleteLeaked bool
	// Workspace is how each lease's workspace is loaded (ConfigHome, Host);
	// Root is replaced by the lease's workspace_root.
	Workspace spec.Options
}

// Action is what taking over a lease does.
type Action string

const (
	Adopt  Action = "adopt"  // an imported lease's VM becomes an ad-hoc sandbox
	Delete Action = "delete" // a leaked VM is deleted (Options.DeleteLeaked)
)

// Backend says whether a driver v1's leases use could be asked which VMs
// exist.
type Backend struct {
	Driver    string `json:"driver"`
	Listed    bool   `json:"listed"`
	Instances int    `json:"instances"` // how many it listed, under any name
	Why       string `json:"why,omitempty"`
}

// Entry is one lease, what it means and what was done.
type Entry struct {
	leases.Entry
	Action Action `json:"action,omitempty"` // adopt (import) or delete (leaked, with DeleteLeaked)
	// Sandbox is the ad-hoc sandbox an import becomes: the instance_id,
	// or a name derived from it when that is not a valid sandbox name.
	Sandbox string   `json:"sandbox,omitempty"`
	Notes   []string `json:"notes,omitempty"` // what the reader should know: a mapped name, a moved lease start
	Done    bool     `json:"done"`
	Error   string   `json:"error,omitempty"`
}

// Inventory is v1's database, what the backends list and what each lease
// means, as of Now.
type Inventory struct {
	DB       string        // the database's absolute path
	Schema   leases.Schema // the shape of its leases table
	Now      time.Time
	Backends []Backend // the sbf drivers v1's leases map to, by name
	// Leases are classified by class, then instance_id; an import's Action
	// (adopt) and Sandbox are set.
	Leases []Entry
	Counts map[leases.Class]int
	owner  map[string]map[string]reconcile.Driver // driver → VM name → the driver that lists it
}

// Plan is what taking over v1's leases would do (Run's report before it
// runs): the inventory with each lease's action.
type Plan struct {
	DB           string
	Schema       leases.Schema
	Now          time.Time
	DeleteLeaked bool
	Backends     []Backend
	Leases       []Entry
	Counts       map[leases.Class]int
}

// Report is a Plan that ran: each entry's Done and Error say how its
// action went.
type Report struct{ Plan }

// TakeInventory reads v1's database (read-only), lists the backends its
// leases use through eng's drivers, and classifies each lease as of eng's
// clock: import, leaked, unseen, skip or gone. A VM sbf keeps already
// (eng's host index, or sbf's label on it) is never imported again nor
// deleted as leaked. A missing database is an error that wraps
// fs.ErrNotExist.
func TakeInventory(ctx context.Context, eng *reconcile.Engine, src Source) (*Inventory, error) {
	db, err := leases.Read(ctx, src.DB)
	if err != nil {
		return nil, err
	}
	dm := src.Drivers
	if dm == nil {
		dm = drivers.V1Backends()
	}
	now := eng.Clock.Now().UTC()
	listed := listBackends(ctx, eng.Drivers, db.Leases, dm)
	held, retry, err := heldInstances(eng.HostDir, listed.labelled, db.Leases, dm)
	if err != nil {
		return nil, err
	}
	listed.Held = held
	// Classify under the sandbox names the leases become, so an id that is
	// not a valid sandbox name is mapped rather than skipped; the entries
	// keep v1's ids.
	named, v1IDs := slices.Clone(db.Leases), map[string]string{}
	for i, l := range named {
		if name, mapped := sandboxName(l.InstanceID); mapped {
			named[i].InstanceID, v1IDs[name] = name, l.InstanceID
		}
	}
	classified := leases.Classify(named, listed.Inventory, leases.Options{Now: now, Drivers: dm, DirExists: isDir})

	inv := &Inventory{DB: db.Path, Schema: db.Schema, Now: now, Backends: []Backend{}, Leases: []Entry{},
		Counts: classified.Counts, owner: listed.owner}
	for _, d := range slices.Sorted(maps.Keys(listed.used)) {
		names, ok := listed.Listed[d]
		inv.Backends = append(inv.Backends, Backend{Driver: d, Listed: ok, Instances: len(names), Why: listed.Unlisted[d]})
	}
	for _, e := range classified.Entries {
		inv.Leases = append(inv.Leases, entry(e, v1IDs, retry))
	}
	return inv, nil
}

// entry is a classified lease under v1's id again; an import gets its
// action, its sandbox's name and what the reader should know about it.
func entry(e leases.Entry, v1IDs map[string]string, retry map[string]bool) Entry {
	ie := Entry{Entry: e}
	id, mapped := v1IDs[e.InstanceID]
	if mapped {
		ie.InstanceID = id
	}
	if e.Class != leases.Import {
		return ie
	}
	ie.Action, ie.Sandbox = Adopt, e.InstanceID
	if mapped {
		ie.Notes = append(ie.Notes, fmt.Sprintf("v1's id %q is not a valid sbf sandbox name, so the sandbox is "+
			"named %s; v1 clients must use that name", id, e.InstanceID))
	}
	if retry[ie.InstanceID] {
		ie.Notes = append(ie.Notes, "an earlier import of it did not finish; importing it again")
	}
	if !spec.HasSpec(e.WorkspaceRoot) {
		ie.Notes = append(ie.Notes, fmt.Sprintf("no %s (nor v1's .orbitforge.toml, .lima-mcp.toml) in the "+
			"workspace: built-in defaults apply; sbf mcp and sbf serve expire the sandbox, sbf's CLI commands "+
			"there need the file (an empty one will do)", spec.FileName))
	}
	return ie
}
