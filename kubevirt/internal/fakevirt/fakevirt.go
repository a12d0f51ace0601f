// Package fakevirt is a stand-in for KubeVirt's controllers in tests against a real API
// server that runs no KubeVirt: it plays the VM controller (a VMI for every VM whose
// runStrategy is Always, none for a halted one, the VM's finalizer held until its VMI is
// gone) and virt-handler (the VMI's phase, IP and Ready condition), with injectable
// delays and faults. It boots nothing.
package fakevirt

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/clock"
)

// Finalizer is the one KubeVirt's VM controller puts on every VM.
const Finalizer = "kubevirt.io/virtualMachineControllerFinalize"

// Options shape the stand-in's behaviour.
type Options struct {
	StartDelay time.Duration // from runStrategy Always to a running, ready VMI
	StopDelay  time.Duration // from Halted (or the VM's deletion) to the VMI gone
	// Fault, when it returns a message for a VM, makes its VMI fail with it.
	Fault func(vm *kv.VirtualMachine) string
	IP    string // the guests' address; default 10.0.2.2
	Clock clock.Clock
	Poll  time.Duration // default 20ms
}

// Controller runs in one namespace.
type Controller struct {
	c    client.Client
	ns   string
	o    Options
	mu   sync.Mutex
	seen map[types.UID]time.Time // when a VM was first seen wanting a change
}

// Run plays KubeVirt in namespace until ctx ends.
func Run(ctx context.Context, c client.Client, namespace string, o Options) *Controller {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Poll == 0 {
		o.Poll = 20 * time.Millisecond
	}
	if o.IP == "" {
		o.IP = "10.0.2.2"
	}
	k := &Controller{c: c, ns: namespace, o: o, seen: map[types.UID]time.Time{}}
	go func() {
		for ctx.Err() == nil {
			k.pass(ctx)
			select {
			case <-ctx.Done():
			case <-o.Clock.After(o.Poll):
			}
		}
	}()
	return k
}

func (k *Controller) pass(ctx context.Context) {
	var vms kv.VirtualMachineList
	if err := k.c.List(ctx, &vms, client.InNamespace(k.ns)); err != nil {
		return
	}
	for i := range vms.Items {
		k.reconcile(ctx, &vms.Items[i])
	}
}

// due reports whether vm has wanted a change for at least d.
func (k *Controller) due(vm *kv.VirtualMachine, d time.Duration) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.o.Clock.Now()
	first, ok := k.seen[vm.UID]
	if !ok {
		k.seen[vm.UID], first = now, now
	}
	if now.Sub(first) >= d {
		delete(k.seen, vm.UID)
		return true
	}
	return false
}

func (k *Controller) reconcile(ctx context.Context, vm *kv.VirtualMachine) {
	vmi := &kv.VirtualMachineInstance{}
	err := k.c.Get(ctx, types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}, vmi)
	if apierrors.IsNotFound(err) {
		vmi = nil
	} else if err != nil {
		return
	}
	deleting := vm.DeletionTimestamp != nil
	switch {
	case !deleting && !slices.Contains(vm.Finalizers, Finalizer):
		vm.Finalizers = append(vm.Finalizers, Finalizer)
		k.c.Update(ctx, vm)
		return
	case deleting && vmi == nil:
		vm.Finalizers = slices.DeleteFunc(vm.Finalizers, func(f string) bool { return f == Finalizer })
		k.c.Update(ctx, vm)
		return
	case (deleting || !runs(vm)) && vmi != nil:
		if vmi.DeletionTimestamp == nil && k.due(vm, k.o.StopDelay) {
			k.c.Delete(ctx, vmi)
			k.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(vm.Namespace),
				client.MatchingLabels{kv.CreatedByLabel: string(vmi.UID)})
		}
	case !deleting && runs(vm) && vmi == nil:
		if k.due(vm, k.o.StartDelay) {
			k.boot(ctx, vm)
		}
	case !deleting && runs(vm) && vmi.DeletionTimestamp == nil &&
		(vmi.Status.Phase == "" || vmi.Status.Phase == kv.Pending):
		k.run(ctx, vm, vmi) // a boot cut short, or a launcher pod refused: KubeVirt tries again
	}
	k.status(ctx, vm, vmi)
}

func runs(vm *kv.VirtualMachine) bool {
	return vm.Spec.RunStrategy != nil && *vm.Spec.RunStrategy == kv.RunStrategyAlways
}

// boot makes vm's VMI, running and ready (or failed, when a fault says so).
func (k *Controller) boot(ctx context.Context, vm *kv.VirtualMachine) {
	yes := true
	vmi := &kv.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: vm.Name, Namespace: vm.Namespace, Labels: vm.Spec.Template.ObjectMeta.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: kv.GroupVersion.String(), Kind: "VirtualMachine",
				Name: vm.Name, UID: vm.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: vm.Spec.Template.Spec,
	}
	if err := k.c.Create(ctx, vmi); err != nil {
		return
	}
	k.run(ctx, vm, vmi)
}

// run makes the VMI's launcher pod, then marks the VMI running: in that order, as in
// KubeVirt (the VMI runs in the pod), so that whoever sees the VMI ready finds its pod.
func (k *Controller) run(ctx context.Context, vm *kv.VirtualMachine, vmi *kv.VirtualMachineInstance) {
	if err := k.launcher(ctx, vmi); err != nil {
		k.refused(ctx, vmi, err)
		return
	}
	vmi.Status.NodeName = "stand-in"
	vmi.Status.Phase = kv.Running
	vmi.Status.Interfaces = []kv.VirtualMachineInstanceNetworkInterface{
		{Name: "default", IP: k.o.IP, IPs: []string{k.o.IP}}}
	cond := kv.VirtualMachineInstanceCondition{Type: kv.VirtualMachineInstanceReady, Status: corev1.ConditionTrue}
	if k.o.Fault != nil {
		if msg := k.o.Fault(vm); msg != "" {
			vmi.Status.Phase = kv.Failed
			cond = kv.VirtualMachineInstanceCondition{Type: kv.VirtualMachineInstanceReady, Status: corev1.ConditionFalse,
				Message: msg}
		}
	}
	vmi.Status.Conditions = []kv.VirtualMachineInstanceCondition{cond}
	k.c.Update(ctx, vmi) // VMIs have no status subresource: the object carries it
}

// refused records, as KubeVirt's VMI controller does, a launcher pod the API server would not
// admit: the VMI stays Pending with a Synchronized=False condition, reason FailedCreate, in
// KubeVirt's words (pkg/virt-controller/watch/vmi: "it needs a privileged namespace to run"
// for a Pod Security refusal), and KubeVirt tries again.
func (k *Controller) refused(ctx context.Context, vmi *kv.VirtualMachineInstance, err error) {
	msg := fmt.Sprintf("failed to create virtual machine pod: %v", err)
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity") {
		msg = fmt.Sprintf("failed to create pod for vmi %s/%s, it needs a privileged namespace to run: %v",
			vmi.Namespace, vmi.Name, err)
	}
	cond := kv.VirtualMachineInstanceCondition{Type: kv.VirtualMachineInstanceSynchronized,
		Status: corev1.ConditionFalse, Reason: FailedCreatePodReason, Message: msg}
	if vmi.Status.Phase == kv.Pending && slices.Contains(vmi.Status.Conditions, cond) {
		return
	}
	vmi.Status.Phase = kv.Pending
	vmi.Status.Conditions = []kv.VirtualMachineInstanceCondition{cond}
	k.c.Update(ctx, vmi)
}

// FailedCreatePodReason is KubeVirt's reason for a launcher pod it could not create.
const FailedCreatePodReason = "FailedCreate"

// launcher makes the VMI's virt-launcher pod, bound to a node that does not exist: there
// is no kubelet behind it to forward ports to. Labelled as KubeVirt's podLabels
// (pkg/virt-controller/services/template.go) labels it: the VMI's labels, then its own.
func (k *Controller) launcher(ctx context.Context, vmi *kv.VirtualMachineInstance) error {
	yes := true
	labels := maps.Clone(vmi.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[kv.AppLabel], labels[kv.CreatedByLabel] = "virt-launcher", string(vmi.UID)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-" + vmi.Name, Namespace: vmi.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: kv.GroupVersion.String(), Kind: "VirtualMachineInstance",
				Name: vmi.Name, UID: vmi.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: "stand-in",
			Containers: []corev1.Container{{Name: "compute", Image: "virt-launcher"}}},
	}
	if err := k.c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	} else if err != nil {
		return nil // made by a boot cut short
	}
	pod.Status.Phase = corev1.PodRunning
	return k.c.Status().Update(ctx, pod)
}

// status writes the VM's status as KubeVirt's controller would.
func (k *Controller) status(ctx context.Context, vm *kv.VirtualMachine, vmi *kv.VirtualMachineInstance) {
	want := kv.VirtualMachineStatus{PrintableStatus: kv.VirtualMachineStatusStopped}
	if vmi != nil {
		want.Created = true
		want.PrintableStatus = kv.VirtualMachineStatusStarting
		if vmi.Status.Phase == kv.Running {
			want.Ready = true
			want.PrintableStatus = kv.VirtualMachineStatusRunning
		}
	}
	st := &vm.Status
	if st.Created == want.Created && st.Ready == want.Ready && st.PrintableStatus == want.PrintableStatus {
		return
	}
	vm.Status.Created, vm.Status.Ready, vm.Status.PrintableStatus = want.Created, want.Ready, want.PrintableStatus
	k.c.Status().Update(ctx, vm)
}
