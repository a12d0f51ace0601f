package lima

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
)

// Snapshots are Lima's own (`limactl snapshot`, experimental in Lima
// 1.2): QEMU's internal qcow2 snapshots, taken with savevm (disk and
// memory) while the VM runs and with qemu-img (disk) while it is stopped.
// Lima's vz and wsl2 VMs have none. Clones are `limactl clone`, which
// copies a stopped instance's folder.

// snapshotsUnsupported says why an instance keeps no snapshots, or nil.
func snapshotsUnsupported(l listedInstance) error {
	if l.VMType == "" || l.VMType == "qemu" {
		return nil
	}
	return drivers.SnapshotUnsupported(Name, fmt.Sprintf("keeps no snapshots of vm_type %q VMs: Lima has them "+
		"only for QEMU", l.VMType), `declare the sandbox with vm_type = "qemu" (sbf destroy, then sbf up)`,
		"or clone the sandbox instead (sbf clone), which every Lima VM can")
}

// Snapshot saves the instance under name with `limactl snapshot create`.
func (d *Driver) Snapshot(ctx context.Context, instance, name string) (drivers.SnapshotInfo, error) {
	if err := drivers.CheckSnapshotName("name", name); err != nil {
		return drivers.SnapshotInfo{}, err
	}
	have, err := d.ListSnapshots(ctx, instance)
	if err != nil {
		return drivers.SnapshotInfo{}, err
	}
	for _, s := range have {
		if s.Name == name {
			// savevm would silently replace it.
			return drivers.SnapshotInfo{}, fmt.Errorf("lima instance %s has a snapshot %s already", instance, name)
		}
	}
	if _, _, err := d.run(ctx, nil, "snapshot", "create", "--tag="+name, instance); err != nil {
		return drivers.SnapshotInfo{}, notFound(err, instance)
	}
	info := drivers.SnapshotInfo{Name: name, CreatedAt: d.opts.Clock.Now().UTC()}
	if after, err := d.ListSnapshots(ctx, instance); err == nil {
		for _, s := range after {
			if s.Name == name {
				info.SizeBytes = s.SizeBytes
			}
		}
	}
	return info, nil
}

// RestoreSnapshot applies a snapshot with `limactl snapshot apply`. A
// running VM jumps back to it, memory and all, so the kept connection
// (whose other end is no longer there) is dropped first. A snapshot
// without memory (VM SIZE 0: taken of a stopped VM, or imported) cannot
// be loaded into a running QEMU (loadvm needs the saved state): the VM is
// refused with drivers.ErrStopFirst and the engine stops and restarts it.
func (d *Driver) RestoreSnapshot(ctx context.Context, instance, name string) error {
	l, s, err := d.snapshotOf(ctx, instance, name)
	if err != nil {
		return err
	}
	if l.Status == "Running" && s.SizeBytes == 0 {
		return fmt.Errorf("restoring the disk-only snapshot %s of lima instance %s: %w", name, instance,
			drivers.ErrStopFirst)
	}
	d.dropConn(instance)
	_, _, err = d.run(ctx, nil, "snapshot", "apply", "--tag="+name, instance)
	return notFound(err, instance)
}

// DeleteSnapshot removes a snapshot with `limactl snapshot delete`.
func (d *Driver) DeleteSnapshot(ctx context.Context, instance, name string) error {
	if err := d.knownSnapshot(ctx, instance, name); err != nil {
		return err
	}
	_, _, err := d.run(ctx, nil, "snapshot", "delete", "--tag="+name, instance)
	return notFound(err, instance)
}

// knownSnapshot checks the name, and that the instance has the snapshot
// (qemu-img's own error for a missing one is not worth parsing).
func (d *Driver) knownSnapshot(ctx context.Context, instance, name string) error {
	if err := drivers.CheckSnapshotName("name", name); err != nil {
		return err
	}
	have, err := d.ListSnapshots(ctx, instance)
	if err != nil {
		return err
	}
	for _, s := range have {
		if s.Name == name {
			return nil
		}
	}
	return fmt.Errorf("lima instance %s, snapshot %s: %w", instance, name, drivers.ErrSnapshotNotFound)
}

// ListSnapshots reads `limactl snapshot list`.
func (d *Driver) ListSnapshots(ctx context.Context, instance string) ([]drivers.SnapshotInfo, error) {
	l, err := d.inspect(ctx, instance)
	if err != nil {
		return nil, err
	}
	if err := snapshotsUnsupported(l); err != nil {
		return nil, err
	}
	out, _, err := d.run(ctx, nil, "snapshot", "list", instance)
	if err != nil {
		return nil, notFound(err, instance)
	}
	return parseSnapshotList(string(out)), nil
}

// inspect is what `limactl list --json NAME` says of one instance.
func (d *Driver) inspect(ctx context.Context, instance string) (listedInstance, error) {
	listed, err := d.listJSON(ctx, anyInstance, instance)
	var ce *CommandError
	switch {
	case errors.As(err, &ce) && strings.Contains(ce.Stderr, "No instance matching"):
		return listedInstance{}, fmt.Errorf("lima instance %s: %w", instance, drivers.ErrNotFound)
	case err != nil:
		return listedInstance{}, fmt.Errorf("inspecting %s: %w", instance, err)
	case len(listed) != 1 || listed[0].Name != instance:
		return listedInstance{}, fmt.Errorf("lima instance %s: limactl lists %d such instances: %w", instance,
			len(listed), drivers.ErrNotFound)
	}
	return listed[0], nil
}

// Clone makes dst from source with `limactl clone`, which copies only a
// stopped instance: a running source is stopped for the copy and started
// again after it. dst gets its own resources, mounts and ports (limactl
// edit); a snapshot is applied to the copy and, like every snapshot the
// copy carried over, deleted from it. A clone that fails halfway is
// deleted.
func (d *Driver) Clone(ctx context.Context, source drivers.Spec, snapshot string, dst drivers.Spec) error {
	src, err := d.inspect(ctx, source.Name)
	if err != nil {
		return fmt.Errorf("cloning %s: %w", source.Name, err)
	}
	if snapshot != "" {
		if err := snapshotsUnsupported(src); err != nil {
			return err
		}
		if err := d.knownSnapshot(ctx, source.Name, snapshot); err != nil {
			return err
		}
	}
	running := src.Status == "Running"
	if running {
		drivers.Progressf(ctx, "stopping %s to copy its disk (limactl clone copies stopped instances)", source.Name)
		if err := d.Stop(ctx, source.Name); err != nil {
			return fmt.Errorf("stopping %s to clone it: %w", source.Name, err)
		}
	}
	err = d.cloneStopped(ctx, source.Name, snapshot, dst)
	if running {
		drivers.Progressf(ctx, "starting %s again", source.Name)
		if serr := d.Start(ctx, source); serr != nil {
			err = errors.Join(err, fmt.Errorf("starting %s again after cloning it: %w", source.Name, serr))
		}
	}
	return err
}

func (d *Driver) cloneStopped(ctx context.Context, source, snapshot string, dst drivers.Spec) error {
	if _, _, err := d.run(ctx, nil, "clone", source, dst.Name); err != nil {
		return fmt.Errorf("cloning %s: %w", source, guidance(err))
	}
	err := d.finishClone(ctx, snapshot, dst)
	if err != nil {
		if derr := d.Delete(context.WithoutCancel(ctx), dst.Name); derr != nil {
			err = errors.Join(err, fmt.Errorf("deleting the unfinished clone %s: %w", dst.Name, derr))
		}
	}
	return err
}

// finishClone makes a fresh copy dst's own: not its source's sandbox's
// (labels), from the snapshot asked for, with none of the source's
// snapshots, resized as dst says.
func (d *Driver) finishClone(ctx context.Context, snapshot string, dst drivers.Spec) error {
	if err := drivers.RemoveLabels(d.instanceDir(dst.Name)); err != nil {
		return err
	}
	if snapshot != "" {
		if _, _, err := d.run(ctx, nil, "snapshot", "apply", "--tag="+snapshot, dst.Name); err != nil {
			return fmt.Errorf("applying snapshot %s to the clone: %w", snapshot, err)
		}
	}
	l, err := d.inspect(ctx, dst.Name)
	if err != nil {
		return err
	}
	if snapshotsUnsupported(l) == nil {
		copied, err := d.ListSnapshots(ctx, dst.Name)
		if err != nil {
			return err
		}
		for _, s := range copied {
			if _, _, err := d.run(ctx, nil, "snapshot", "delete", "--tag="+s.Name, dst.Name); err != nil {
				return fmt.Errorf("deleting the source's snapshot %s from the clone: %w", s.Name, err)
			}
		}
	}
	return d.Reconfigure(ctx, dst)
}
