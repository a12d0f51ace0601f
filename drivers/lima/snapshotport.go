package lima

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/sandboxforge/sbf/drivers"
)

// ExportSnapshot writes a snapshot's disk (not its memory) into dst with
// qemu-img; the VM may keep running.
func (d *Driver) ExportSnapshot(ctx context.Context, instance, name, dst string) error {
	if _, _, err := d.snapshotOf(ctx, instance, name); err != nil {
		return err
	}
	q, err := d.findQemuImg()
	if err != nil {
		return err
	}
	if err := q.exportDisk(ctx, d.diffDisk(instance), name, dst); err != nil {
		return fmt.Errorf("exporting snapshot %s of %s: %w", name, instance, err)
	}
	return nil
}

// ImportSnapshot writes an export into the instance's disk as snapshot
// name. qemu-img may not write a disk QEMU holds open, so a running VM is
// refused with drivers.ErrStopFirst (the engine stops and restarts it).
func (d *Driver) ImportSnapshot(ctx context.Context, instance, name, src string) error {
	if err := drivers.CheckSnapshotName("name", name); err != nil {
		return err
	}
	have, err := d.ListSnapshots(ctx, instance) // refuses vz
	if err != nil {
		return err
	}
	for _, s := range have {
		if s.Name == name {
			return fmt.Errorf("lima instance %s has a snapshot %s already", instance, name)
		}
	}
	l, err := d.inspect(ctx, instance)
	if err != nil {
		return err
	}
	if l.Status == "Running" {
		return fmt.Errorf("importing a snapshot into lima instance %s: %w", instance, drivers.ErrStopFirst)
	}
	q, err := d.findQemuImg()
	if err != nil {
		return err
	}
	if err := q.importDisk(ctx, d.diffDisk(instance), name, src); err != nil {
		return fmt.Errorf("importing snapshot %s into %s: %w", name, instance, err)
	}
	return nil
}

// diffDisk is the instance's writable disk, which holds its snapshots
// (basedisk, the image, is its backing file).
func (d *Driver) diffDisk(instance string) string {
	return filepath.Join(d.instanceDir(instance), "diffdisk")
}

// snapshotOf is an instance (Lima's word on it) and one of its snapshots.
func (d *Driver) snapshotOf(ctx context.Context, instance, name string) (listedInstance, drivers.SnapshotInfo,
	error) {
	if err := drivers.CheckSnapshotName("name", name); err != nil {
		return listedInstance{}, drivers.SnapshotInfo{}, err
	}
	l, err := d.inspect(ctx, instance)
	if err != nil {
		return listedInstance{}, drivers.SnapshotInfo{}, err
	}
	have, err := d.ListSnapshots(ctx, instance)
	if err != nil {
		return listedInstance{}, drivers.SnapshotInfo{}, err
	}
	for _, s := range have {
		if s.Name == name {
			return l, s, nil
		}
	}
	return listedInstance{}, drivers.SnapshotInfo{}, fmt.Errorf("lima instance %s, snapshot %s: %w", instance, name,
		drivers.ErrSnapshotNotFound)
}

var _ drivers.SnapshotPorter = (*Driver)(nil)
