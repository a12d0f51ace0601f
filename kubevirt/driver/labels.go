package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	kv "kubevirt.io/api/core/v1"

	"github.com/sandboxforge/sbf/drivers"
)

// labelOf reads the pool label sbf recorded on a VM (MarkSpare, Claim); nil when none.
func labelOf(vm *kv.VirtualMachine) (*drivers.Label, error) {
	var l drivers.Label
	for key, into := range map[string]any{AnnotationSpare: &l.Spare, AnnotationOwner: &l.Owner} {
		if v, ok := vm.Annotations[key]; ok {
			if err := json.Unmarshal([]byte(v), into); err != nil {
				return nil, fmt.Errorf("VirtualMachine %s/%s: annotation %s is corrupt: %w", vm.Namespace, vm.Name, key, err)
			}
		}
	}
	if l.Spare == nil && l.Owner == nil {
		return nil, nil
	}
	return &l, nil
}

func setAnnotation(vm *kv.VirtualMachine, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if vm.Annotations == nil {
		vm.Annotations = map[string]string{}
	}
	vm.Annotations[key] = string(data)
	return nil
}

// MarkSpare records that a pool made the VM and that it is ready; its lease is its idle
// time from now (the pool deletes it then too), until a claim gives it a sandbox's.
func (d *Driver) MarkSpare(ctx context.Context, instance string, s drivers.SpareLabel) error {
	return d.update(ctx, instance, func(vm *kv.VirtualMachine) error {
		if err := setAnnotation(vm, AnnotationSpare, s); err != nil {
			return err
		}
		if !s.IdleUntil.IsZero() {
			vm.Annotations[AnnotationLeaseEnd] = leaseStamp(s.IdleUntil)
		}
		return nil
	})
}

// Claim records the VM's owner, and relabels it with the owner's workspace and sandbox.
// Of concurrent claims exactly one wins: each writes against the resourceVersion it read,
// and a loser reads the winner's owner on its retry. A VM sbf did not make may be claimed
// (an import): the claim makes it sbf's. A teammate's ready spare becomes this user's
// (claimed-by), within this user's ceilings.
func (d *Driver) Claim(ctx context.Context, instance string, o drivers.Owner) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var vm kv.VirtualMachine
		if err := d.c.Get(ctx, d.key(instance), &vm); err != nil {
			return d.apiError("reading VirtualMachine "+d.key(instance).String(), err)
		}
		cur, err := labelOf(&vm)
		if err != nil {
			return err
		}
		if cur != nil && cur.Owner != nil {
			if cur.Owner.Same(o) {
				return nil
			}
			return &drivers.OwnedError{Instance: instance, Owner: *cur.Owner}
		}
		if o.Spare && (cur == nil || cur.Spare == nil) {
			return fmt.Errorf("claiming %s: not a ready spare: %w", instance, drivers.ErrNotFound)
		}
		if err := d.claimFor(ctx, &vm, o); err != nil {
			return err
		}
		if err := setAnnotation(&vm, AnnotationOwner, o); err != nil {
			return err
		}
		own(&vm, instance, o)
		return d.c.Update(ctx, &vm) // a conflict is retried: someone else wrote it first
	})
	switch {
	case err == nil, errors.Is(err, drivers.ErrOwned), errors.Is(err, drivers.ErrNotFound):
		return err
	case apierrors.IsConflict(err) || apierrors.IsForbidden(err):
		return d.apiError("claiming "+instance, err)
	}
	return fmt.Errorf("claiming %s: %w", instance, err)
}

// claimFor makes a VM a teammate holds this user's when one of their sandboxes adopts it:
// only a ready spare changes hands (the caller checked it is one), and claimed-by names the
// user once the per-owner ceilings said they may hold it too (what a create of its shape
// would be asked). An import or a retirement of a teammate's VM is refused: it is theirs.
func (d *Driver) claimFor(ctx context.Context, vm *kv.VirtualMachine, o drivers.Owner) error {
	who, err := d.whoami(ctx)
	if err != nil {
		return err
	}
	holder := HeldBy(vm)
	switch {
	case holder == "" || holder == who:
		return nil
	case who == "" || !o.Spare || o.Retired:
		return fmt.Errorf("VirtualMachine %s/%s is held by %s, not by these credentials' user: only a teammate's "+
			"ready spare may be claimed: %w", vm.Namespace, vm.Name, holder, drivers.ErrOwned)
	}
	if err := d.admitUse(ctx, "claiming "+instanceName(vm), vm.Name, UseOf(vm)); err != nil {
		return err
	}
	vm.Annotations[AnnotationClaimedBy] = who
	return nil
}

// own labels vm as sbf's and the owner's.
func own(vm *kv.VirtualMachine, instance string, o drivers.Owner) {
	if vm.Labels == nil {
		vm.Labels = map[string]string{}
	}
	vm.Labels[LabelManagedBy] = ManagedBy
	if vm.Annotations[AnnotationInstance] == "" {
		vm.Annotations[AnnotationInstance] = instance
	}
	if o.Retired {
		return
	}
	if v := labelValue(o.WorkspaceID); v != "" {
		vm.Labels[LabelWorkspace] = v
		vm.Labels[LabelWorkspaceTag] = drivers.WorkspaceTag(o.WorkspaceID)
	}
	if v := labelValue(o.Sandbox); v != "" {
		vm.Labels[LabelSandbox] = v
	}
}

// RecordLease annotates the VM with its lease's end, for people and tools that look at
// the cluster; sbf's own record of the lease is the workspace's.
func (d *Driver) RecordLease(ctx context.Context, instance string, expiresAt time.Time) error {
	var moved *kv.VirtualMachine
	err := d.update(ctx, instance, func(vm *kv.VirtualMachine) error {
		if vm.Annotations == nil {
			vm.Annotations = map[string]string{}
		}
		if vm.Annotations[AnnotationLeaseEnd] != leaseStamp(expiresAt) {
			moved = vm
		}
		vm.Annotations[AnnotationLeaseEnd] = leaseStamp(expiresAt)
		return nil
	})
	if err == nil && moved != nil {
		d.event(ctx, moved, ReasonLeaseRecorded, "sbf moved the lease end to "+leaseStamp(expiresAt))
	}
	return err
}

// leaseStamp is a lease end as the annotation holds it: RFC 3339, whole seconds, rounded
// up so that truncation never ends a lease early.
func leaseStamp(t time.Time) string {
	if t2 := t.Truncate(time.Second); !t2.Equal(t) {
		t = t2.Add(time.Second)
	}
	return t.UTC().Format(time.RFC3339)
}
