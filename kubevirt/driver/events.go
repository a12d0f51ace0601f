package driver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/clock"
)

// Reasons of the Events sbf's driver records on a VM (kubectl describe vm, kubectl get
// events): what happened to it and by whom, for whoever looks at the cluster.
const (
	ReasonCreated       = "Created"
	ReasonLeaseRecorded = "LeaseRecorded"
	ReasonStartRefused  = "StartRefused"
)

// The lease controller's Events on a VM it deleted (package expiry), and the component it
// records them as.
const (
	ReasonLeaseExpired     = "LeaseExpired"
	ReasonNoLease          = "NoLease"
	ReasonOverOwnerCeiling = "OverOwnerCeiling"
	ControllerComponent    = "sbf-kubevirt-controller"
)

// EventSource says who records an Event: a component and its instance (a user, a replica).
type EventSource struct {
	Component, Instance string
	Clock               clock.Clock
}

// RecordEvent leaves an Event on vm, labelled as sbf's. Best effort: what it reports is done
// (or refused) already, and a user whose Role lacks it loses nothing else.
func RecordEvent(ctx context.Context, c client.Writer, src EventSource, vm *kv.VirtualMachine, reason,
	message string) error {
	now := metav1.NewTime(src.Clock.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: vm.Name + ".", Namespace: vm.Namespace,
			Labels: map[string]string{LabelManagedBy: ManagedBy}},
		InvolvedObject: corev1.ObjectReference{APIVersion: kv.GroupVersion.String(), Kind: "VirtualMachine",
			Namespace: vm.Namespace, Name: vm.Name, UID: vm.UID},
		Reason: reason, Message: message, Type: corev1.EventTypeNormal, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source:            corev1.EventSource{Component: src.Component, Host: src.Instance},
		ReportingInstance: src.Instance, ReportingController: "sandboxforge.dev/" + src.Component,
	}
	if reason == ReasonStartRefused {
		ev.Type = corev1.EventTypeWarning
	}
	return c.Create(ctx, ev)
}

// event records, best effort, what this sbf did to vm, as its user.
func (d *Driver) event(ctx context.Context, vm *kv.VirtualMachine, reason, message string) {
	who, _ := d.whoami(ctx) // best effort, as the Event
	src := EventSource{Component: "sbf", Instance: who, Clock: d.clock}
	_ = RecordEvent(ctx, d.c, src, vm, reason, message)
}
