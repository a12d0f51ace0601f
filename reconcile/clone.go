package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// CloneRequest asks for a new sandbox whose VM starts as a copy of
// another sandbox's disk.
type CloneRequest struct {
	Source string
	// Name is the new sandbox's ("": the first free SOURCE-clone-N).
	Name string
	// Snapshot copies the disk as it was in one of the source's snapshots
	// ("": as it is now).
	Snapshot string
	// TTL is the new lease's length (nil: the source's lease length).
	TTL *time.Duration
	// Audit names the door that asked, for the workspace's history.
	Audit *Audit
}

// Clone declares a new ad-hoc sandbox like its source (its VM keys,
// network, runtime, services and compose; not its host ports, which are
// the source's), leases it, and converges it: its VM is created as a copy
// of the source's disk (clone_of, from_snapshot), counted against [lease]
// max_instances like any create. A clone that cannot be made leaves
// nothing behind. It returns the new sandbox's name.
func (e *Engine) Clone(ctx context.Context, ws spec.Options, req CloneRequest) (*Result, string, error) {
	now := e.Clock.Now()
	looked, r, err := e.read(ws, now)
	if err != nil {
		return nil, "", err
	}
	name, err := e.checkClone(r, looked.File, &req)
	if err != nil {
		return nil, name, err
	}
	opts := Options{Targets: []string{name}, Rollback: true, read: &firstRead{now: now, r: r, looked: looked},
		Audit: req.Audit, Intent: engineEdit{op: "clone", targets: []string{name}, change: cloneEdit(req, name)}}
	res, err := e.Apply(ctx, ws, opts)
	if res != nil && res.Plan != nil && hasProblem(res, name) {
		// The plan could not make it (its source went meanwhile): the
		// declaration goes too, or it would stay a problem in every plan.
		undo := Options{Targets: opts.Targets, Intent: Destroy{Sandboxes: opts.Targets}}
		if _, uerr := e.Apply(context.WithoutCancel(ctx), ws, undo); uerr != nil {
			err = errors.Join(err, fmt.Errorf("dropping the clone %s: %w", name, uerr))
		}
	}
	if err != nil {
		return res, name, fmt.Errorf("cloning %s as %s: %w", req.Source, name, err)
	}
	return res, name, nil
}

// checkClone decides what a door does not: the source holds a live lease
// and has a VM, its backend clones, the snapshot (if any) is the
// source's, the lease length is within bounds, and the new name is free.
func (e *Engine) checkClone(r *spec.Resolved, rec *state.File, req *CloneRequest) (string, error) {
	now := e.Clock.Now()
	if err := live(r, rec, req.Source, now); err != nil {
		return "", err
	}
	src := rec.Sandboxes[req.Source]
	if src == nil || src.Phase.Terminal() || src.Instance == "" {
		return "", coded.New(coded.InstanceNotFound, map[string]any{"sandbox": req.Source},
			"sandbox %s has no VM to clone yet; run 'sbf up %s' first", req.Source, req.Source)
	}
	if req.Snapshot != "" {
		if err := drivers.CheckSnapshotName("snapshot", req.Snapshot); err != nil {
			return "", err
		}
		if s := rec.FindSnapshot(req.Source, req.Snapshot); s == nil || s.Instance != src.Instance {
			return "", coded.New(coded.SnapshotNotFound, map[string]any{"sandbox": req.Source, "name": req.Snapshot},
				"sandbox %s has no snapshot %s", req.Source, req.Snapshot)
		}
	}
	if req.TTL != nil && (*req.TTL <= 0 || *req.TTL > r.Config.Lease.MaxTTL.Std()) {
		return "", ttlInvalid(r, *req.TTL, "", "a lease lasts longer than zero and at most lease.max_ttl")
	}
	driver := r.Host.ResolveDriver(r.Config.Sandboxes[req.Source].Driver)
	drv, err := e.Drivers(driver, r)
	if err != nil {
		return "", err
	}
	if drivers.CapabilitiesOf(drv).Clone == nil {
		return "", drivers.NoSnapshots(driver)
	}
	name := req.Name
	if name == "" {
		name = freeCloneName(r, rec, req.Source)
	}
	return name, nameFree(r, rec, name)
}

// nameFree refuses a name that is no sandbox's name or is one already.
func nameFree(r *spec.Resolved, rec *state.File, name string) error {
	if !spec.ValidSandboxName(name) {
		return coded.New(coded.ConfigInvalid, map[string]any{"sandbox": coded.Clip(name)},
			"%q is not a valid sandbox name (letters, digits, '-' and '_', starting and ending with a letter or "+
				"digit, at most 40)", coded.Clip(name))
	}
	_, declared := r.Config.Sandboxes[name]
	if sb := rec.Sandboxes[name]; declared || sb != nil && !sb.Phase.Terminal() {
		return coded.New(coded.ConfigInvalid, map[string]any{"sandbox": name},
			"a sandbox named %s exists already; choose another name for the clone", name)
	}
	return nil
}

// freeCloneName is SOURCE-clone-N with the smallest N no sandbox has (a
// long source name is shortened to keep within a sandbox name's length).
func freeCloneName(r *spec.Resolved, rec *state.File, source string) string {
	for n := 1; ; n++ {
		suffix := fmt.Sprintf("-clone-%d", n)
		base := source[:min(len(source), 40-len(suffix))]
		name := strings.TrimRight(base, "-_") + suffix
		_, declared := r.Config.Sandboxes[name]
		if _, recorded := rec.Sandboxes[name]; !declared && !recorded {
			return name
		}
	}
}

// cloneEdit declares the clone and acquires its lease. It checks again
// against the document as it is when written, so two clones never take
// one name.
func cloneEdit(req CloneRequest, name string) Edit {
	return func(m *spec.Managed, c EditContext) error {
		r := c.Resolved
		if err := live(r, c.State, req.Source, c.Now); err != nil {
			return err
		}
		if err := nameFree(r, c.State, name); err != nil {
			return err
		}
		keys := cloneKeys(r.Config.Sandboxes[req.Source])
		keys["clone_of"] = req.Source
		if req.Snapshot != "" {
			keys["from_snapshot"] = req.Source + "/" + req.Snapshot
		}
		m.Declare(name, keys)
		ttl := cloneTTL(m, r, req.Source, c.Now)
		if req.TTL != nil {
			ttl = *req.TTL
		}
		m.SetLease(name, renew(spec.LeaseRecord{}, false, ttl, c.Now))
		return nil
	}
}

// cloneTTL is the source's lease length: its declared ttl, else the
// length of the lease it holds (an ad-hoc sandbox keeps its ttl only
// there: create_instance's ttl_minutes is never declared), within
// lease.max_ttl; a clone of a 30-minute instance must not get the
// workspace's default.
func cloneTTL(m *spec.Managed, r *spec.Resolved, source string, now time.Time) time.Duration {
	if r.Config.Sandboxes[source].TTL.Std() > 0 {
		return leaseTTL(r, source)
	}
	if cur, held := heldLease(m, r, source, now); held && cur.ExpiresAt.After(cur.AcquiredAt) {
		return min(cur.ExpiresAt.Sub(cur.AcquiredAt), r.Config.Lease.MaxTTL.Std())
	}
	return leaseTTL(r, source)
}

// cloneKeys are the keys a clone is declared with: what makes its VM the
// same as its source's, and what runs in it. Host ports stay the
// source's alone (a host port is taken once).
func cloneKeys(sb spec.Sandbox) map[string]any {
	keys := map[string]any{"cpus": int64(sb.CPUs), "memory_gib": sb.MemoryGiB, "disk_gib": sb.DiskGiB,
		"runtime": sb.Runtime, "compose": sb.Compose}
	for k, v := range map[string]string{"driver": sb.Driver, "arch": sb.Arch, "vm_type": sb.VMType,
		"template": sb.Template, "emulation": sb.Emulation} {
		if v != "" {
			keys[k] = v
		}
	}
	if sb.TTL > 0 {
		keys["ttl"] = sb.TTL.String()
	}
	if len(sb.Mounts) > 0 {
		keys["mounts"] = anyList(sb.Mounts)
	}
	if len(sb.Services) > 0 {
		keys["services"] = anyList(sb.Services)
	}
	image := map[string]any{}
	for k, v := range map[string]string{"location": sb.Image.Location, "digest": sb.Image.Digest,
		"kernel": sb.Image.Kernel, "kernel_cmdline": sb.Image.KernelCmdline, "initrd": sb.Image.Initrd} {
		if v != "" {
			image[k] = v
		}
	}
	if len(image) > 0 {
		keys["image"] = image
	}
	if sb.Network.Egress != "" {
		// The copy is held to its source's network policy, never a wider one.
		keys["network"] = map[string]any{"egress": sb.Network.Egress, "allow": anyList(sb.Network.Allow)}
	}
	return keys
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func hasProblem(res *Result, sandbox string) bool {
	for _, p := range res.Plan.Problems {
		if p.Sandbox == sandbox {
			return true
		}
	}
	return false
}
