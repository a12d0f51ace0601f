package v1import

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/v1import/leases"
)

// adoption is one SandboxForge v1 lease to take over: its VM, as it is,
// becomes the ad-hoc sandbox Sandbox of the workspace WS, leased until
// Expires, so v1 clients' instance ids keep working and the loop deletes
// the VM when the lease ends.
type adoption struct {
	WS       spec.Options // the lease's workspace (WS.Root is its workspace_root)
	Sandbox  string       // the ad-hoc sandbox's name: v1's instance_id, or sandboxName's mapping of it
	Driver   string       // the sbf driver that runs the VM
	Instance string       // the VM's backend name (agent-XXXXXXXX), kept as is
	Expires  time.Time    // v1's expires_at, kept as the lease end
	Lease    leases.Lease // everything else v1 knew (created_at, runtime_ready, docker_command, owner_session)
}

// listEvery lists every instance of a backend under any name, v1's
// agent-XXXXXXXX included: ListAll (lima), or List where the registration
// says it reports every name (the sim's whole world). A Driver's List
// otherwise reports only sbf's instances (named by sbf, or carrying sbf's
// label once adopted: lima filters by name and label, hyperv by its Notes
// marker), so the VMs v1 left are invisible to it: ok is false.
func listEvery(ctx context.Context, d reconcile.Driver, name string) (list []drivers.Instance, ok bool, err error) {
	reg, _ := drivers.Lookup(name)
	switch l := drivers.CapabilitiesOf(d).ListAll; {
	case l != nil:
		list, err = l.ListAll(ctx)
	case reg.V1.ListsEveryName:
		list, err = d.List(ctx)
	default:
		return nil, false, nil
	}
	return list, true, err
}

// sandboxName is the sandbox a v1 lease becomes: its instance_id when
// that is a valid sandbox name (v1's inst_XXXXXXXX always is), else a
// name derived from it deterministically (its letters and digits joined by
// '_', then '-' and 8 hex digits of its SHA-1), so a rerun maps it alike.
func sandboxName(id string) (name string, mapped bool) {
	if spec.ValidSandboxName(id) {
		return id, false
	}
	var b strings.Builder
	gap := false
	for _, r := range id {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			gap = false
			b.WriteRune(r)
		} else {
			gap = true
		}
	}
	sum := sha1.Sum([]byte(id))
	tag := hex.EncodeToString(sum[:4])
	base := b.String()
	if len(base) > 31 { // base + "-" + tag stays within the 40 characters a name may have
		base = strings.TrimRight(base[:31], "_")
	}
	if base == "" {
		return "v1-" + tag, true
	}
	return base + "-" + tag, true
}

// shapeKeys are the [vm] keys an imported VM is declared with: the
// shape its backend reports (v1's database records none; v1 made the VM
// from the workspace's [vm] keys of the time, which may have changed
// since), so the next plan finds nothing to change. No mounts or ports
// either: v1's VMs have only what their Lima template gave them, which sbf
// does not manage. A vm_type the backend's registration does not map
// (V1Import.VMTypes) is refused: the next plan would replace the VM.
func shapeKeys(inst drivers.Instance, vmTypes []string) (map[string]any, error) {
	rep := inst.Reported
	keys := map[string]any{"mounts": []any{}, "ports": []any{}}
	if rep.CPUs > 0 {
		keys["cpus"] = int64(rep.CPUs)
	}
	if rep.MemoryGiB > 0 {
		keys["memory_gib"] = rep.MemoryGiB
	}
	if rep.DiskGiB > 0 {
		keys["disk_gib"] = rep.DiskGiB
	}
	if rep.Arch != "" {
		keys["arch"] = rep.Arch
	}
	switch {
	case rep.VMType == "":
	case slices.Contains(vmTypes, rep.VMType):
		keys["vm_type"] = rep.VMType
	default:
		return nil, fmt.Errorf("%s runs as vm_type %q, which a sandbox of the %s driver cannot be declared with "+
			"(%s); it is not imported, as sbf would replace it", inst.Name, rep.VMType, inst.Driver,
			orNone(strings.Join(vmTypes, ", ")))
	}
	return keys, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// adopt adopts one v1 VM through the engine (Engine.AdoptInstance): the
// workspace's managed overrides declare the ad-hoc sandbox with an adopt
// key, the VM's shape and v1's lease; the VM gets sbf's owner label and is
// recorded (started if it was stopped). The container runtime is declared
// when v1 had made it ready, so later docker tools find it; v1's service
// containers are left as they run, undeclared. It returns notes for the
// report: a lease start moved to fit [lease] max_lifetime, or a change
// the next plan would still make to the VM.
func adopt(ctx context.Context, eng *reconcile.Engine, ad adoption) ([]string, error) {
	var notes []string
	r, err := eng.Load(ad.WS)
	if err != nil {
		return nil, fmt.Errorf("loading the workspace's configuration: %w", err)
	}
	drv, err := eng.Drivers(ad.Driver, r)
	if err != nil {
		return nil, err
	}
	list, ok, err := listEvery(ctx, drv, ad.Driver)
	switch {
	case err != nil:
		return nil, fmt.Errorf("listing the %s driver's instances: %w", ad.Driver, err)
	case !ok:
		return nil, fmt.Errorf("the %s driver cannot list %s", ad.Driver, ad.Instance)
	}
	i := slices.IndexFunc(list, func(inst drivers.Instance) bool { return inst.Name == ad.Instance })
	if i < 0 {
		return nil, fmt.Errorf("the %s driver no longer lists %s", ad.Driver, ad.Instance)
	}
	reg, _ := drivers.Lookup(ad.Driver)
	keys, err := shapeKeys(list[i], reg.V1.VMTypes)
	if err != nil {
		return nil, err
	}
	if ad.Lease.RuntimeReady || ad.Lease.DockerCommand != "" {
		maps.Copy(keys, runtimeKeys(r, drv))
	}
	acquired := ad.Lease.CreatedAt
	if life := r.Config.Lease.MaxLifetime.Std(); !acquired.IsZero() && life > 0 && acquired.Add(life).Before(ad.Expires) {
		// v1 had no max_lifetime: a lease extended for longer than sbf's
		// would be cut short (or end at once), so it counts from later.
		acquired = ad.Expires.UTC().Truncate(time.Second).Add(-life)
		notes = append(notes, fmt.Sprintf("v1 created it at %s, longer than lease.max_lifetime (%s) before its "+
			"expiry; the lease counts from %s", ad.Lease.CreatedAt.UTC().Format(time.RFC3339), r.Config.Lease.MaxLifetime,
			acquired.Format(time.RFC3339)))
	}
	res, err := eng.AdoptInstance(ctx, ad.WS, reconcile.AdoptRequest{Sandbox: ad.Sandbox, Instance: ad.Instance,
		Driver: ad.Driver, ExpiresAt: ad.Expires, AcquiredAt: acquired, Keys: keys})
	if err != nil {
		return notes, err
	}
	if rec, ok := res.Recorded(ad.Sandbox); !ok || rec.Instance != ad.Instance {
		return notes, fmt.Errorf("sandbox %s was not recorded with VM %s", ad.Sandbox, ad.Instance)
	}
	// What converging the sandbox would still do to the VM: nothing, unless
	// the backend reports less than sbf compares.
	if next, err := eng.Plan(ctx, ad.WS, reconcile.Options{Targets: []string{ad.Sandbox},
		Intent: reconcile.Reconcile{}}); err == nil {
		for _, act := range next.Plan.Actions {
			if act.Sandbox == ad.Sandbox && (act.Kind == plan.Update || act.Kind == plan.Replace) {
				notes = append(notes, fmt.Sprintf("the next plan would %s it: %s", act.Kind, act.Cause))
			}
		}
	}
	return notes, nil
}

// runtimeKeys declare the container runtime v1 had made ready, as `sbf up`
// declares it (no services: v1's service containers run undeclared). The
// one place the import depends on the engine's bootstrap layers.
func runtimeKeys(r *spec.Resolved, drv reconcile.Driver) map[string]any {
	return reconcile.BootstrapKeys(r, drv, false)
}
