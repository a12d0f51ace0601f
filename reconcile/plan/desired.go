// Package reconcile is sbf's engine: it observes the world, plans the
// difference to the desired state with a pure function, and executes the
// plan without making decisions of its own.
package plan

import (
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/images"
	"github.com/sandboxforge/sbf/internal/byname"
	"github.com/sandboxforge/sbf/spec"
)

// Desired is what the workspace asks for, reduced to what planning needs.
type Desired struct {
	Root        string
	WorkspaceID string
	Sandboxes   map[string]DesiredSandbox
	// Pools are the [pool.NAME] tables: spares to keep booted.
	Pools map[string]DesiredPool
	// KeepRecords is how long records of sandboxes without a VM stay.
	KeepRecords time.Duration
	// Force has this run delete VMs without a clean stop (destroy
	// --force): not desired state, the request's way of reaching it.
	Force bool
}

// DesiredSandbox is one declared sandbox.
type DesiredSandbox struct {
	Name     string
	Instance string
	Driver   string // resolved: never "auto"
	VM       drivers.Spec
	// Lease is nil when the sandbox holds none (never acquired, or
	// destroyed): such a sandbox must not exist.
	Lease *spec.LeaseRecord
	TTL   time.Duration // lease length when acquired or renewed
	// Layers is what runs inside the VM; nil when nothing does.
	Layers *Layers
	// AdHoc says that only the managed overrides declare it (sbf up, an
	// MCP create): its layers are the bootstrap it was declared with.
	AdHoc bool
	// Adopt names an existing instance to import as the VM (an adopt
	// key sbf wrote), instead of creating one.
	Adopt string
	// CloneOf and FromSnapshot say what a new VM's disk starts from: the
	// disk of another sandbox's VM, or a snapshot sbf took of one.
	// Source is what they resolved to against the records and the world
	// (resolveSources); nil, with SourceErr saying why, when they did not.
	CloneOf      string
	FromSnapshot string
	Source       *Source
	SourceErr    error
}

// DesiredFrom reduces a resolved spec.
func DesiredFrom(r *spec.Resolved) Desired {
	d := Desired{Root: r.Root, WorkspaceID: r.WorkspaceID, Sandboxes: map[string]DesiredSandbox{},
		KeepRecords: r.Config.Lease.KeepRecords.Std(), Pools: desiredPools(r)}
	for name, sb := range r.Config.Sandboxes {
		ds := DesiredSandbox{
			Name:     name,
			Instance: drivers.InstanceName(r.WorkspaceID, name),
			Driver:   r.Host.ResolveDriver(sb.Driver),
			VM:       vmSpec(drivers.InstanceName(r.WorkspaceID, name), sb, r.Root, r.Host),
			TTL:      sb.TTL.Std(),
			Adopt:    sb.Adopt,
			CloneOf:  sb.CloneOf,
			AdHoc:    r.AdHoc[name],
		}
		ds.FromSnapshot = sb.FromSnapshot
		ds.VM.Backend = sb.BackendSettings(ds.Driver)
		if ds.TTL == 0 {
			ds.TTL = r.Config.Lease.DefaultTTL.Std()
		}
		if l, ok := r.Config.Leases[name]; ok {
			ds.Lease = &l
		}
		d.Sandboxes[name] = ds
	}
	return d
}

// vmSpec is the one conversion of a sandbox's keys to the VM a driver
// makes: the keys drivers.Spec declares under their names are taken as
// written (TestEveryVMKeyReachesTheDriverAndTheStateFile), then those a
// driver must see resolved.
func vmSpec(instance string, sb spec.Sandbox, root string, host spec.Host) drivers.Spec {
	var s drivers.Spec
	byname.Copy(&s, &sb)
	s.Name, s.Arch = instance, drivers.CanonicalArch(sb.Arch)
	if s.Arch == "" {
		s.Arch = drivers.CanonicalArch(host.Arch)
	}
	for _, p := range []*string{&s.Image.Location, &s.Image.Kernel, &s.Image.Initrd} {
		*p = absPath(root, *p)
	}
	s.Mounts, s.Ports, s.Egress = absMounts(root, sb.Mounts), nilIfEmpty(sb.Ports), egressOf(sb.Network)
	return s
}

// egressOf is a network table as a VM's policy: nil when unrestricted.
func egressOf(n spec.Network) *drivers.Egress {
	if !n.Restricted() {
		return nil
	}
	e := &drivers.Egress{Mode: n.Egress}
	if n.Egress == "allowlist" {
		e.Allow = slices.Clone(n.Allow)
	}
	return e
}

// absPath makes a relative image path absolute against the workspace;
// URLs and absolute paths stay as they are.
func absPath(root, p string) string {
	if _, sbfImage := images.NameOf(p); p == "" || sbfImage || strings.Contains(p, "://") || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// absMounts names each mount's host folder absolutely, as the spec's
// checks judged it: a driver never resolves a relative folder against a
// working directory of its own.
func absMounts(root string, mounts []string) []string {
	out := nilIfEmpty(mounts)
	for i, m := range out {
		loc, _ := spec.MountLocation(root, m)
		_, rest, found := strings.Cut(m, ":")
		out[i] = loc
		if found {
			out[i] += ":" + rest
		}
	}
	return out
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// drivers lists the backends this workspace's desired and recorded
// sandboxes use, sorted.
func DriversInUse(d Desired, recorded map[string]string) []string {
	seen := map[string]bool{}
	for _, sb := range d.Sandboxes {
		seen[sb.Driver] = true
	}
	for _, drv := range recorded {
		seen[drv] = true
	}
	out := make([]string, 0, len(seen))
	for drv := range seen {
		out = append(out, drv)
	}
	slices.Sort(out)
	return out
}
