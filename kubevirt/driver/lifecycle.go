package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
)

// ErrNotOurs is wrapped by any operation on a VM sbf did not make (no ownership label),
// whatever its name: it is refused, never touched.
var ErrNotOurs = errors.New("not made by sbf (no " + LabelManagedBy + "=" + ManagedBy + " label); sbf leaves it alone")

func (d *Driver) key(instance string) types.NamespacedName {
	return types.NamespacedName{Namespace: d.set.Namespace, Name: ObjectName(instance)}
}

// get reads instance's VM: drivers.ErrNotFound when there is none, ErrNotOurs when it is
// not sbf's.
func (d *Driver) get(ctx context.Context, instance string) (*kv.VirtualMachine, error) {
	if err := d.ready(); err != nil {
		return nil, err
	}
	var vm kv.VirtualMachine
	if err := d.c.Get(ctx, d.key(instance), &vm); err != nil {
		return nil, d.apiError("reading VirtualMachine "+d.key(instance).String(), err)
	}
	if vm.Labels[LabelManagedBy] != ManagedBy {
		return nil, fmt.Errorf("VirtualMachine %s: %w", d.key(instance), ErrNotOurs)
	}
	return &vm, nil
}

// update applies change to instance's VM, reading it again when someone else wrote it in
// between.
func (d *Driver) update(ctx context.Context, instance string, change func(*kv.VirtualMachine) error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vm, err := d.get(ctx, instance)
		if err != nil {
			return err
		}
		if err := change(vm); err != nil {
			return err
		}
		if err := d.c.Update(ctx, vm); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return d.apiError("updating VirtualMachine "+vm.Name, err)
		}
		return nil
	})
}

// Validate refuses, at plan time, what a cluster VM cannot be.
func (d *Driver) Validate(_ context.Context, s drivers.Spec) error {
	switch {
	case len(s.Mounts) > 0:
		return &drivers.SpecError{Driver: Name, Key: "mounts", Reason: "share host paths into a cluster VM (use sbf sync)"}
	case len(s.Ports) > 0:
		return &drivers.SpecError{Driver: Name, Key: "ports", Reason: "forward this host's ports into a cluster VM"}
	}
	_, err := newVM(s, d.set, d.guest)
	return err
}

// Create makes the VM, halted, with its network policy, and the namespace when there is
// none yet. A policy no NetworkPolicy can hold is refused before anything is made.
func (d *Driver) Create(ctx context.Context, s drivers.Spec) error {
	if err := d.ready(); err != nil {
		return err
	}
	vm, err := newVM(s, d.set, d.guest)
	if err != nil {
		return err
	}
	if err := d.EnforceEgress(ctx, s); err != nil {
		return fmt.Errorf("creating %s: %w", s.Name, err)
	}
	if err := d.ensureNamespace(ctx); err != nil {
		return err
	}
	if err := d.admitOwner(ctx, s); err != nil {
		return err
	}
	who, err := d.whoami(ctx)
	if err != nil {
		return fmt.Errorf("creating %s: %w", s.Name, err)
	}
	if who != "" {
		vm.Annotations[AnnotationCreatedBy] = who
	}
	if err := d.c.Create(ctx, vm); err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace sbf made is going with its last VM (dropEmptyNamespace).
			return &drivers.UnavailableError{Driver: Name, ProbableCause: "namespace_terminating",
				Reason: "namespace " + d.set.Namespace + " is being deleted: " + err.Error(),
				NextSteps: []string{"run again once it is gone (kubectl get namespace " + d.set.Namespace +
					"); sbf makes it anew"}}
		}
		return d.apiError("creating VirtualMachine "+d.key(s.Name).String(), err)
	}
	d.event(ctx, vm, ReasonCreated, fmt.Sprintf("sbf made the VirtualMachine for sandbox %s of workspace %s, "+
		"halted, its lease until %s", vm.Labels[LabelSandbox], vm.Labels[LabelWorkspaceTag],
		vm.Annotations[AnnotationLeaseEnd]))
	if s.Egress == nil {
		return nil
	}
	if err := d.applyEgress(ctx, vm, s.Egress); err != nil {
		return fmt.Errorf("creating %s: its network policy: %w", s.Name, err) // halted: Start tries again
	}
	return nil
}

// ensureNamespace makes the namespace the VMs live in, labelled as sbf's, when missing.
func (d *Driver) ensureNamespace(ctx context.Context) error {
	var ns corev1.Namespace
	err := d.c.Get(ctx, types.NamespacedName{Name: d.set.Namespace}, &ns)
	if err == nil || apierrors.IsForbidden(err) {
		return nil // one who may not read namespaces uses the one they were given as it is
	}
	if !apierrors.IsNotFound(err) {
		return d.apiError("reading namespace "+d.set.Namespace, err)
	}
	ns = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.set.Namespace,
		Labels: map[string]string{LabelManagedBy: ManagedBy}}}
	if err := d.c.Create(ctx, &ns); err != nil && !apierrors.IsAlreadyExists(err) {
		if apierrors.IsForbidden(err) {
			u := d.forbidden(err.Error())
			u.NextSteps = append([]string{fmt.Sprintf("create the namespace (kubectl create namespace %s), "+
				"or set SBF_KUBEVIRT_NAMESPACE to one you may use", d.set.Namespace)}, u.NextSteps...)
			return fmt.Errorf("creating namespace %s: %w", d.set.Namespace, u)
		}
		return d.apiError("creating namespace "+d.set.Namespace, err)
	}
	return nil
}

// Start applies the spec's network policy, then sets the VM's runStrategy to Always and
// waits for its VMI to be running and ready. A policy change is Stop, Reconfigure, Start:
// the VM runs under the new policy from its first packet.
func (d *Driver) Start(ctx context.Context, s drivers.Spec) error {
	err := d.update(ctx, s.Name, func(vm *kv.VirtualMachine) error {
		if err := d.applyEgress(ctx, vm, s.Egress); err != nil {
			return fmt.Errorf("applying the network policy: %w", err)
		}
		always := kv.RunStrategyAlways
		vm.Spec.RunStrategy = &always
		labelTemplate(vm) // a VM made before sbf labelled templates: its pod must be selectable
		return nil
	})
	if err != nil {
		return fmt.Errorf("starting %s: %w", s.Name, err)
	}
	return d.waitFor(ctx, s.Name, "ready", d.set.StartTimeout, func(vmi *kv.VirtualMachineInstance) (bool, string, error) {
		switch {
		case vmi == nil:
			return false, "waiting for KubeVirt to create the VirtualMachineInstance", nil
		case vmi.Status.Phase == kv.Failed:
			return false, "", fmt.Errorf("%s: the VirtualMachineInstance failed: %s", s.Name, failure(vmi))
		case vmi.Status.Phase == kv.Running && ready(vmi):
			return true, "", nil
		}
		if err := d.launcherRefused(vmi); err != nil {
			if vm, _ := d.get(ctx, s.Name); vm != nil {
				d.event(ctx, vm, ReasonStartRefused, err.Error())
			}
			return false, "", fmt.Errorf("starting %s: %w", s.Name, err)
		}
		return false, fmt.Sprintf("VirtualMachineInstance is %s", phaseOf(vmi)), nil
	})
}

// Stop sets the VM's runStrategy to Halted and waits for its VMI to go.
func (d *Driver) Stop(ctx context.Context, name string) error {
	err := d.update(ctx, name, func(vm *kv.VirtualMachine) error {
		halted := kv.RunStrategyHalted
		vm.Spec.RunStrategy = &halted
		return nil
	})
	if err != nil {
		return fmt.Errorf("stopping %s: %w", name, err)
	}
	d.fwd.drop(name)
	return d.waitGone(ctx, name, false)
}

// Delete deletes the VM and waits for it and its VMI to go. KubeVirt stops the VMI first
// (the VM's finalizer); its DataVolume goes with it (owner references).
func (d *Driver) Delete(ctx context.Context, name string) error {
	vm, err := d.get(ctx, name)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", name, err)
	}
	d.fwd.drop(name)
	if err := d.c.Delete(ctx, vm, client.Preconditions{UID: &vm.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", name, d.apiError("deleting VirtualMachine "+vm.Name, err))
	}
	if err := d.waitGone(ctx, name, true); err != nil {
		return err
	}
	d.dropEgress(ctx, vm.Name) // only now: the policy held while the VM was stopping
	d.dropEmptyNamespace(ctx)
	return nil
}

// dropEmptyNamespace deletes the namespace once its last VM is gone, when sbf made it (its
// label says so): trying sbf on a cluster leaves nothing behind. A namespace sbf was given
// (SBF_KUBEVIRT_NAMESPACE, the kubeconfig's) is never deleted, nor one holding any VM,
// sbf's or not. Best effort: one who may not delete namespaces keeps it, harmlessly. Two
// sbf processes share a generated namespace only when they serve the same workspace, whose
// lock keeps a create from racing this.
func (d *Driver) dropEmptyNamespace(ctx context.Context) {
	var ns corev1.Namespace
	if err := d.c.Get(ctx, types.NamespacedName{Name: d.set.Namespace}, &ns); err != nil ||
		ns.Labels[LabelManagedBy] != ManagedBy || ns.DeletionTimestamp != nil {
		return
	}
	var vms kv.VirtualMachineList
	if err := d.c.List(ctx, &vms, client.InNamespace(ns.Name), client.Limit(1)); err != nil || len(vms.Items) > 0 {
		return
	}
	_ = d.c.Delete(ctx, &ns, client.Preconditions{UID: &ns.UID, ResourceVersion: &ns.ResourceVersion})
}

// Reconfigure applies CPUs, memory and a larger disk to a stopped VM.
func (d *Driver) Reconfigure(ctx context.Context, s drivers.Spec) error {
	set, err := d.set.forSpec(s)
	if err != nil {
		return err
	}
	var grown *corev1.PersistentVolumeClaim
	err = d.update(ctx, s.Name, func(vm *kv.VirtualMachine) error {
		if runs(vm) {
			return fmt.Errorf("%s is running; stop it before reconfiguring", s.Name)
		}
		size(vm, s, set)
		if dvs := vm.Spec.DataVolumeTemplates; len(dvs) == 1 && s.DiskGiB > 0 {
			grown = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: dvs[0].Name, Namespace: vm.Namespace}}
		}
		return nil
	})
	if err != nil || grown == nil {
		return err
	}
	return d.growClaim(ctx, grown.Name, gib(s.DiskGiB))
}

// growClaim asks for a larger root disk: the claim CDI made for the DataVolume (named
// like it), when there is one yet. Shrinking is a replace, decided by the planner.
func (d *Driver) growClaim(ctx context.Context, name string, size resource.Quantity) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var pvc corev1.PersistentVolumeClaim
		err := d.c.Get(ctx, types.NamespacedName{Namespace: d.set.Namespace, Name: name}, &pvc)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return d.apiError("reading PersistentVolumeClaim "+name, err)
		}
		if cur := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; cur.Cmp(size) >= 0 {
			return nil
		}
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = size
		if err := d.c.Update(ctx, &pvc); err != nil && !apierrors.IsConflict(err) {
			return d.apiError("growing PersistentVolumeClaim "+name, err)
		} else if err != nil {
			return err
		}
		return nil
	})
}

// vmi reads instance's VMI; nil when there is none.
func (d *Driver) vmi(ctx context.Context, instance string) (*kv.VirtualMachineInstance, error) {
	var vmi kv.VirtualMachineInstance
	err := d.c.Get(ctx, d.key(instance), &vmi)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, d.apiError("reading VirtualMachineInstance "+d.key(instance).String(), err)
	}
	return &vmi, nil
}

// waitFor looks at instance's VMI until done says so, reporting what it waits for.
func (d *Driver) waitFor(ctx context.Context, instance, goal string, timeout time.Duration,
	done func(*kv.VirtualMachineInstance) (bool, string, error)) error {
	deadline := d.clock.Now().Add(timeout)
	last := ""
	for looked := false; ; looked = true {
		vmi, err := d.vmi(ctx, instance)
		if err != nil {
			return err
		}
		ok, why, err := done(vmi)
		if ok || err != nil {
			return err
		}
		if !looked {
			// With KubeVirt down nothing makes, stops or removes a VMI (nor lifts a VM's
			// finalizer): say so now rather than after the whole timeout.
			if err := d.kubevirtRunning(); err != nil {
				return fmt.Errorf("%s is not %s: %w", instance, goal, d.notRunning(err, goal))
			}
		}
		if why != last {
			drivers.Progressf(ctx, "%s: %s", instance, why)
			last = why
		}
		if !d.clock.Now().Before(deadline) {
			return fmt.Errorf("%s is not %s after %s: %s", instance, goal, timeout, why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.clock.After(d.set.Poll):
		}
	}
}

// waitGone waits for instance's VMI (and with vmToo its VM) to be gone.
func (d *Driver) waitGone(ctx context.Context, instance string, vmToo bool) error {
	gone := func(vmi *kv.VirtualMachineInstance) (bool, string, error) {
		if vmi != nil {
			return false, fmt.Sprintf("waiting for the VirtualMachineInstance (%s) to go", phaseOf(vmi)), nil
		}
		if !vmToo {
			return true, "", nil
		}
		var vm kv.VirtualMachine
		if err := d.c.Get(ctx, d.key(instance), &vm); apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "waiting for the VirtualMachine to go", nil
	}
	return d.waitFor(ctx, instance, "gone", d.set.StartTimeout, gone)
}

func phaseOf(vmi *kv.VirtualMachineInstance) string {
	if vmi.Status.Phase == "" {
		return "pending"
	}
	return string(vmi.Status.Phase)
}

// failure is what a failed VMI says of itself.
func failure(vmi *kv.VirtualMachineInstance) string {
	if vmi == nil {
		return "gone"
	}
	for _, c := range vmi.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return c.Message
		}
	}
	return string(vmi.Status.Phase)
}

// kubevirtRunning is nil when virt-api answers (it serves subresources.kubevirt.io/v1
// while it runs), else why not.
func (d *Driver) kubevirtRunning() error {
	disc, err := discovery.NewDiscoveryClientForConfig(d.cfg)
	if err != nil {
		return err
	}
	_, err = disc.ServerResourcesForGroupVersion("subresources.kubevirt.io/v1")
	return err
}

// notRunning is KubeVirt being down, coded, with what to do about it.
func (d *Driver) notRunning(err error, goal string) *drivers.UnavailableError {
	then := "start again once KubeVirt runs"
	if goal == "gone" {
		then = "the VirtualMachine stays marked for deletion and goes once KubeVirt runs again"
	}
	return &drivers.UnavailableError{Driver: Name, ProbableCause: "kubevirt_not_running",
		Reason: "KubeVirt is not running on " + d.where + " (virt-api does not answer: " + err.Error() +
			"), so nothing acts on VirtualMachines; not waiting for it",
		NextSteps: []string{then,
			"kubectl get kubevirt -A: the KubeVirt resource's Available condition says why",
			"kubectl -n kubevirt get pods: virt-api, virt-controller and virt-handler should be running",
			"sbf doctor checks it"}}
}

// whoami is the user the API server knows these credentials as (a SelfSubjectReview, which
// every authenticated user may make), asked until it answers; "" when it cannot say (an older
// server, without the API). A failed ask is an error, never taken for "nobody": on a shared
// namespace, telling one's own VMs from a teammate's depends on it.
func (d *Driver) whoami(ctx context.Context) (string, error) {
	d.whoMu.Lock()
	defer d.whoMu.Unlock()
	if d.known {
		return d.user, nil
	}
	review := &authnv1.SelfSubjectReview{}
	switch err := d.c.Create(ctx, review); {
	case err == nil:
		d.user = review.Status.UserInfo.Username
	case apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) || meta.IsNoMatchError(err):
		// no SelfSubjectReview here: the server cannot say
	default:
		return "", d.apiError("asking the API server whom these credentials name (a SelfSubjectReview)", err)
	}
	d.known = true
	return d.user, nil
}
