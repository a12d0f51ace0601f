package v1import

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
	"github.com/sandboxforge/sbf/v1import/leases"
)

// heldInstances are the instances sbf keeps, by driver: those its host
// index (in hostDir) lists and those a backend listed with sbf's label
// (labelled). A v1 VM imported before is one of them. One exception: a
// VM the index records as the very sandbox a lease becomes, in the
// lease's workspace, but that carries no label, is an import that failed
// (or was interrupted) before its claim; it is not held, so the lease is
// imported again (adopting is safe to repeat). retry names those leases
// by instance_id.
func heldInstances(hostDir string, labelled map[string]map[string]string, ls []leases.Lease, dm map[string]string) (
	held map[string]map[string]string, retry map[string]bool, err error) {
	all, err := state.OpenHostIndex(hostDir).All()
	if err != nil {
		return nil, nil, err
	}
	canonical := func(root string) string {
		if abs, _, err := spec.WorkspaceIdentity(root); err == nil {
			return abs
		}
		return root
	}
	type key struct{ driver, vm, sandbox, root string }
	unfinished := map[key]string{}
	for _, l := range ls {
		if d, ok := dm[backendKey(l)]; ok && l.BackendInstance != "" && l.WorkspaceRoot != "" {
			name, _ := sandboxName(l.InstanceID)
			unfinished[key{d, l.BackendInstance, name, canonical(l.WorkspaceRoot)}] = l.InstanceID
		}
	}
	retry = map[string]bool{}
	held = map[string]map[string]string{}
	add := func(driver, vm, what string) {
		if held[driver] == nil {
			held[driver] = map[string]string{}
		}
		if _, ok := held[driver][vm]; !ok {
			held[driver][vm] = what
		}
	}
	for _, e := range all {
		if _, ok := labelled[e.Driver][e.Instance]; !ok {
			if id, ok := unfinished[key{e.Driver, e.Instance, e.Sandbox, canonical(e.WorkspaceRoot)}]; ok {
				retry[id] = true
				continue
			}
		}
		add(e.Driver, e.Instance, fmt.Sprintf("sandbox %s of %s", e.Sandbox, e.WorkspaceRoot))
	}
	for driver, vms := range labelled {
		for vm, what := range vms {
			add(driver, vm, what)
		}
	}
	return held, retry, nil
}

// backendKey is how a lease's backend_name is looked up in a driver map.
func backendKey(l leases.Lease) string { return strings.ToLower(strings.TrimSpace(l.Backend)) }

// listed is what the backends v1's leases use list, and which driver
// value listed each VM (deleting goes through it).
type listed struct {
	leases.Inventory
	used  map[string]bool                        // the sbf drivers v1's leases map to
	owner map[string]map[string]reconcile.Driver // driver → VM name → the driver that lists it
	// labelled are the listed VMs carrying sbf's label (an owner, or a
	// pool's): driver → VM name → what the label says.
	labelled map[string]map[string]string
}

// listBackends lists, once each, the drivers v1's leases map to; a
// backend kept per workspace (sim) is listed in each lease's workspace. A
// backend that lists only sbf's names is not asked: it cannot show v1's
// VMs.
func listBackends(ctx context.Context, get reconcile.DriverFactory, ls []leases.Lease, dm map[string]string) listed {
	inv := listed{
		Inventory: leases.Inventory{Listed: map[string]map[string]bool{}, Unlisted: map[string]string{}},
		used:      map[string]bool{},
		owner:     map[string]map[string]reconcile.Driver{},
		labelled:  map[string]map[string]string{},
	}
	roots := map[string]map[string]bool{}
	for _, l := range ls {
		if d, ok := dm[backendKey(l)]; ok {
			inv.used[d] = true
			if roots[d] == nil {
				roots[d] = map[string]bool{}
			}
			if filepath.IsAbs(l.WorkspaceRoot) && isDir(l.WorkspaceRoot) {
				roots[d][l.WorkspaceRoot] = true
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(inv.used)) {
		reg, ok := drivers.Lookup(name)
		if !ok {
			inv.Unlisted[name] = drivers.NotBuiltIn(name).Error()
			continue
		}
		var where []*spec.Resolved
		if reg.PerWorkspace {
			for _, r := range slices.Sorted(maps.Keys(roots[name])) {
				where = append(where, &spec.Resolved{Root: r})
			}
			if len(where) == 0 {
				inv.Unlisted[name] = "it keeps its instances per workspace and no lease on it names a workspace here"
				continue
			}
		} else {
			where = []*spec.Resolved{nil}
		}
		if why := inv.listOne(ctx, get, name, where); why != "" {
			inv.Unlisted[name] = why
		}
	}
	return inv
}

// listOne lists one driver in each of where, and says why it could not.
func (inv *listed) listOne(ctx context.Context, get reconcile.DriverFactory, name string,
	where []*spec.Resolved) string {
	names, owner, labelled := map[string]bool{}, map[string]reconcile.Driver{}, map[string]string{}
	for _, r := range where {
		d, err := get(name, r)
		if err != nil {
			return err.Error()
		}
		list, every, err := listEvery(ctx, d, name)
		if err != nil {
			return "listing its instances: " + err.Error()
		}
		if !every {
			return fmt.Sprintf("the %s driver lists only instances sbf named (%s…) or labelled, so v1's VMs "+
				"(agent-…) are invisible to it until it can list instances under any name", name, drivers.Prefix)
		}
		for _, inst := range list {
			names[inst.Name] = true
			if owner[inst.Name] == nil {
				owner[inst.Name] = d
			}
			switch l := inst.Label; {
			case l == nil:
			case l.Owner != nil:
				labelled[inst.Name] = "labelled as " + l.Owner.String()
			case l.Spare != nil:
				labelled[inst.Name] = "labelled as a spare of pool " + l.Spare.Pool
			}
		}
	}
	inv.Listed[name] = names
	inv.owner[name] = owner
	inv.labelled[name] = labelled
	return ""
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
