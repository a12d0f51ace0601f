// Package driver is sbf's KubeVirt backend: a sandbox is a VirtualMachine in a namespace,
// labelled with its workspace and sandbox (ownership without name parsing), started and
// stopped by its runStrategy, reached over SSH through the API server's port-forward to
// its virt-launcher pod. It runs inside the sbf-kubevirt plugin (drivers/external), so
// sbf itself never links client-go.
package driver

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/external"
	"github.com/sandboxforge/sbf/internal/clock"
)

// Driver acts on one namespace of one cluster.
type Driver struct {
	c      client.Client
	cfg    *rest.Config // for port-forward streams
	set    Settings
	clock  clock.Clock
	where  string // the cluster, as messages name it
	guest  guest
	fwd    *forwarder
	getenv func(string) string
	whoMu  sync.Mutex
	known  bool   // whoami has its answer
	user   string // whoami's answer
}

// Options build a Driver.
type Options struct {
	Getenv func(string) string
	Clock  clock.Clock
	// Config and Client, when set, stand in for the kubeconfig's (tests).
	Config *rest.Config
	Client client.Client
	// Poll, when set, replaces the one-second wait between looks at a VM.
	Poll time.Duration
}

// New connects to the cluster the environment names. Settings that depend on the
// workspace wait for Hello.
func New(o Options) (*Driver, error) {
	d := &Driver{getenv: o.Getenv, clock: o.Clock, cfg: o.Config, c: o.Client, where: "the test cluster"}
	if d.clock == nil {
		d.clock = clock.Real{}
	}
	if d.cfg == nil {
		cfg, where, err := RESTConfig(o.Getenv)
		if err != nil {
			return nil, err
		}
		d.cfg, d.where = cfg, where
		// The namespace a user's context names is the one they were given and may use; a
		// generated sbf-<tag> is one they may not be allowed to create. An explicit
		// SBF_KUBEVIRT_NAMESPACE still wins, as kubectl's -n wins over the context.
		if ns := ContextNamespace(o.Getenv); ns != "" && o.Getenv("SBF_KUBEVIRT_NAMESPACE") == "" {
			d.getenv = func(k string) string {
				if k == "SBF_KUBEVIRT_NAMESPACE" {
					return ns
				}
				return o.Getenv(k)
			}
		}
	}
	if d.c == nil {
		c, err := NewClient(d.cfg)
		if err != nil {
			return nil, err
		}
		d.c = c
	}
	set, err := SettingsFrom(d.getenv, "")
	if err != nil {
		set.Namespace = "" // decided by Hello's workspace
	}
	if o.Poll > 0 {
		set.Poll = o.Poll
	}
	d.set = set
	d.fwd = newForwarder(d)
	return d, nil
}

// Hello takes the workspace sbf acts for: its id labels the VMs and names the default
// namespace.
func (d *Driver) Hello(_ context.Context, h external.Hello) (external.HelloResult, error) {
	if h.ProtocolVersion != external.ProtocolVersion {
		return external.HelloResult{ProtocolVersion: external.ProtocolVersion}, nil
	}
	set, err := SettingsFrom(d.getenv, h.WorkspaceID)
	if err != nil {
		return external.HelloResult{}, &drivers.UnavailableError{Driver: Name, Reason: err.Error(),
			ProbableCause: "backend_not_configured", NextSteps: []string{"set SBF_KUBEVIRT_NAMESPACE"}}
	}
	set.Poll = d.set.Poll
	d.set = set
	d.guest = guest{WorkspaceID: h.WorkspaceID, User: set.SSHUser, PublicKey: h.SSHPublicKey}
	if h.SSHUser != "" {
		d.guest.User = h.SSHUser
	}
	return external.HelloResult{ProtocolVersion: external.ProtocolVersion, Driver: Name,
		Where: fmt.Sprintf("namespace %s (%s)", set.Namespace, d.where)}, nil
}

// ready refuses to act before a namespace is decided: an empty one would mean every
// namespace of the cluster.
func (d *Driver) ready() error {
	if d.set.Namespace == "" {
		return &drivers.UnavailableError{Driver: Name, Reason: "no namespace: neither SBF_KUBEVIRT_NAMESPACE nor a workspace",
			ProbableCause: "backend_not_configured", NextSteps: []string{"set SBF_KUBEVIRT_NAMESPACE"}}
	}
	return nil
}

// Config is the cluster the driver talks to.
func (d *Driver) Config() *rest.Config { return d.cfg }

// Namespace is where the driver's VMs live.
func (d *Driver) Namespace() string { return d.set.Namespace }

// List reports the VMs labelled as sbf's in the namespace, with their VMIs' state.
func (d *Driver) List(ctx context.Context) ([]drivers.Instance, error) {
	if err := d.ready(); err != nil {
		return nil, err
	}
	sel := client.MatchingLabels{LabelManagedBy: ManagedBy}
	var vms kv.VirtualMachineList
	if err := d.c.List(ctx, &vms, client.InNamespace(d.set.Namespace), sel); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil // a namespace not made yet holds nothing
		}
		return nil, d.apiError("listing VirtualMachines", err)
	}
	var vmis kv.VirtualMachineInstanceList
	if err := d.c.List(ctx, &vmis, client.InNamespace(d.set.Namespace)); err != nil {
		return nil, d.apiError("listing VirtualMachineInstances", err)
	}
	byName := map[string]*kv.VirtualMachineInstance{}
	for i := range vmis.Items {
		byName[vmis.Items[i].Name] = &vmis.Items[i]
	}
	out := make([]drivers.Instance, 0, len(vms.Items))
	who, err := d.whoami(ctx)
	if err != nil {
		return nil, err
	}
	for i := range vms.Items {
		vm := &vms.Items[i]
		if vm.DeletionTimestamp != nil {
			continue // going: Delete waits for it
		}
		inst := drivers.Instance{Name: instanceName(vm), Driver: Name, Status: status(vm, byName[vm.Name]),
			Reported: reported(vm), HeldByAnother: who != "" && HeldBy(vm) != "" && HeldBy(vm) != who,
			Holder: HeldBy(vm)}
		if end, err := time.Parse(time.RFC3339, vm.Annotations[AnnotationLeaseEnd]); err == nil {
			inst.LeaseEnd = end.UTC()
		}
		inst.Reported.Name = inst.Name
		l, err := labelOf(vm)
		if err != nil {
			return nil, err
		}
		inst.Label = l
		out = append(out, inst)
	}
	return out, nil
}

// instanceName is the sbf instance a VM is: the name it was created under.
func instanceName(vm *kv.VirtualMachine) string {
	if n := vm.Annotations[AnnotationInstance]; n != "" {
		return n
	}
	return vm.Name
}

// status is sbf's view: running once its VMI is running and ready; broken when the VMI
// failed; stopped otherwise (halted, or not yet up: Start waits for it).
func status(vm *kv.VirtualMachine, vmi *kv.VirtualMachineInstance) drivers.Status {
	switch {
	case vmi == nil || vmi.DeletionTimestamp != nil:
		return drivers.Stopped
	case vmi.Status.Phase == kv.Failed:
		return drivers.Broken
	case vmi.Status.Phase == kv.Running && ready(vmi) && runs(vm):
		return drivers.Running
	}
	return drivers.Stopped
}

func runs(vm *kv.VirtualMachine) bool {
	return vm.Spec.RunStrategy != nil && *vm.Spec.RunStrategy == kv.RunStrategyAlways
}

func ready(vmi *kv.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kv.VirtualMachineInstanceReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
