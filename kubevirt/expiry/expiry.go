// Package expiry is the cluster's side of sbf's leases: it halts and deletes every
// sbf-labelled VirtualMachine whose lease annotation (sandboxforge.dev/lease-expires-at) is
// past, in the namespaces it is given, for every workspace, from the annotation alone.
//
// A lease is otherwise enforced only by the sbf that holds it, when that sbf runs: a laptop
// that is closed leaves its VM running in the cluster until it opens again. The annotation
// is what any sbf writes when it acquires, renews or extends a lease (drivers.LeaseRecorder),
// so following it needs no workspace folder and no state file; the laptop's sbf finds the
// VM gone at its next run and records the sandbox expired, as it would have itself.
//
// What is never touched: a VM without sbf's managed-by label (whatever its name), a VM with
// no lease annotation (sbf's own loop decides for it), and a VM whose annotation does not
// parse (reported, not deleted: a typo must not destroy someone's work).
package expiry

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/kubevirt/driver"
)

// AnnotationExpiredAt records, on a VM the controller halted, the lease end it acted on, so
// whoever finds the VM halted (before its deletion completes) sees why.
const AnnotationExpiredAt = "sandboxforge.dev/expired-at"

// Options configure a Controller.
type Options struct {
	Client client.WithWatch
	// Namespaces to serve; none means every namespace the credentials may list.
	Namespaces []string
	Clock      clock.Clock
	// Resync bounds how long the controller trusts its watch: a full pass runs at least this
	// often (default 1m), so a lost watch event delays an expiry by at most this much.
	Resync time.Duration
	// Retry is the wait after a failed pass or a broken watch (default 5s).
	Retry time.Duration
	Logf  func(format string, args ...any)
	// OnPass, when set, is told what each pass did (metrics, tests).
	OnPass func(Report)
}

// Report is one pass over the VMs.
type Report struct {
	At      time.Time
	Expired []string // namespace/name of the VMs halted and deleted
	Garbled []string // namespace/name: annotation, for VMs whose lease end does not parse
	Watched int      // sbf-labelled VMs with a lease end still ahead
	Next    time.Time
	Err     error
}

// Controller follows the lease annotations of sbf's VMs.
type Controller struct {
	o       Options
	kick    chan struct{}
	garbled map[string]string // namespace/name → the resourceVersion already reported
}

// New checks o and fills its defaults.
func New(o Options) (*Controller, error) {
	if o.Client == nil {
		return nil, errors.New("expiry: no client")
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Resync <= 0 {
		o.Resync = time.Minute
	}
	if o.Retry <= 0 {
		o.Retry = 5 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Controller{o: o, kick: make(chan struct{}, 1), garbled: map[string]string{}}, nil
}

// Run passes over the VMs until ctx ends: at the earliest lease end it knows of, when a
// watched VM changes (a renewal, a new VM) and at least every Resync.
func (c *Controller) Run(ctx context.Context) error {
	namespaces := c.o.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		go c.watch(ctx, ns)
	}
	for ctx.Err() == nil {
		rep := c.Pass(ctx)
		wait := c.o.Resync
		if rep.Err != nil {
			wait = c.o.Retry
		} else if !rep.Next.IsZero() {
			// Wake at the lease end itself: the annotation has whole seconds, so a VM expires
			// in the pass at (or just after) its second, not a resync later.
			if d := rep.Next.Sub(c.o.Clock.Now()); d < wait {
				wait = d
			}
		}
		t := c.o.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C():
		case <-c.kick:
		}
		t.Stop()
	}
	return nil
}

// watch wakes Run whenever an sbf VM in namespace changes, re-watching when the API server
// ends the watch (it does, every few minutes) or refuses it.
func (c *Controller) watch(ctx context.Context, namespace string) {
	for ctx.Err() == nil {
		var list kv.VirtualMachineList
		w, err := c.o.Client.Watch(ctx, &list, client.InNamespace(namespace),
			client.MatchingLabels{driver.LabelManagedBy: driver.ManagedBy})
		if err != nil {
			c.o.Logf("watching VirtualMachines in %s: %v; passes every %s meanwhile", where(namespace), err, c.o.Resync)
		} else {
			for ev := range w.ResultChan() {
				if ev.Type != watch.Bookmark {
					c.wake()
				}
			}
			w.Stop()
		}
		_ = clock.Sleep(ctx, c.o.Clock, c.o.Retry)
		c.wake() // events may have been missed while no watch ran
	}
}

func (c *Controller) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Pass looks at every sbf VM once, expires those past their lease end, and reports the
// earliest lease end still ahead. Run calls it; it is not safe to call concurrently.
func (c *Controller) Pass(ctx context.Context) Report {
	rep := Report{At: c.o.Clock.Now()}
	defer func() {
		if c.o.OnPass != nil {
			c.o.OnPass(rep)
		}
	}()
	namespaces := c.o.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	var errs []error
	for _, ns := range namespaces {
		var vms kv.VirtualMachineList
		err := c.o.Client.List(ctx, &vms, client.InNamespace(ns),
			client.MatchingLabels{driver.LabelManagedBy: driver.ManagedBy})
		if err != nil {
			errs = append(errs, fmt.Errorf("listing sbf's VirtualMachines in %s: %w", where(ns), err))
			continue
		}
		for i := range vms.Items {
			c.one(ctx, &vms.Items[i], &rep, &errs)
		}
	}
	sort.Strings(rep.Expired)
	sort.Strings(rep.Garbled)
	rep.Err = errors.Join(errs...)
	if rep.Err != nil {
		c.o.Logf("%v", rep.Err)
	}
	return rep
}

// one decides for a single VM, as the list showed it.
func (c *Controller) one(ctx context.Context, vm *kv.VirtualMachine, rep *Report, errs *[]error) {
	key := vm.Namespace + "/" + vm.Name
	// The list selects on the label already; checking again costs nothing and keeps the
	// promise whatever the selector does.
	if vm.Labels[driver.LabelManagedBy] != driver.ManagedBy || vm.DeletionTimestamp != nil {
		return
	}
	raw, ok := vm.Annotations[driver.AnnotationLeaseEnd]
	if !ok {
		return
	}
	end, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		rep.Garbled = append(rep.Garbled, key+": "+raw)
		if c.garbled[key] != vm.ResourceVersion {
			c.garbled[key] = vm.ResourceVersion
			c.o.Logf("VirtualMachine %s: annotation %s=%q is not an RFC 3339 time; left running "+
				"(the owner's sbf renews it, or fix it: kubectl -n %s annotate vm %s %s=...)",
				key, driver.AnnotationLeaseEnd, raw, vm.Namespace, vm.Name, driver.AnnotationLeaseEnd)
		}
		return
	}
	delete(c.garbled, key)
	if rep.At.Before(end) {
		rep.Watched++
		if rep.Next.IsZero() || end.Before(rep.Next) {
			rep.Next = end
		}
		return
	}
	switch err := c.expire(ctx, vm, raw); {
	case err == nil:
		rep.Expired = append(rep.Expired, key)
		c.o.Logf("VirtualMachine %s: lease ended %s; halted and deleted", key, raw)
	case errors.Is(err, errMoved) || apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		// Someone wrote it since the list (a renewal, most likely) or deleted it: the watch
		// brings the next pass, which reads it afresh.
		c.wake()
	default:
		*errs = append(*errs, fmt.Errorf("expiring VirtualMachine %s: %w", key, err))
	}
}

// errMoved is a lease annotation that moved (a renewal) or a VM that went while expiring.
var errMoved = errors.New("the VM changed its lease or went since it was read")

// expire halts vm, then deletes it, each write conditional on the version it read: a
// renewal written in between makes the write fail, never the VM go. A conflict caused by
// anything else (KubeVirt writes the VM's status as it halts) is no reason to keep the VM:
// it is read again and, its lease end unmoved, expired again.
func (c *Controller) expire(ctx context.Context, vm *kv.VirtualMachine, leaseEnd string) error {
	for attempt := 0; ; attempt++ {
		err := c.haltAndDelete(ctx, vm, leaseEnd)
		if !apierrors.IsConflict(err) || attempt == 4 {
			return err
		}
		fresh := &kv.VirtualMachine{}
		if err := c.o.Client.Get(ctx, client.ObjectKeyFromObject(vm), fresh); err != nil {
			return err
		}
		if fresh.UID != vm.UID || fresh.DeletionTimestamp != nil ||
			fresh.Labels[driver.LabelManagedBy] != driver.ManagedBy ||
			fresh.Annotations[driver.AnnotationLeaseEnd] != leaseEnd {
			return errMoved
		}
		vm = fresh
	}
}

func (c *Controller) haltAndDelete(ctx context.Context, vm *kv.VirtualMachine, leaseEnd string) error {
	rs := vm.Spec.RunStrategy
	if rs == nil || *rs != kv.RunStrategyHalted || vm.Annotations[AnnotationExpiredAt] != leaseEnd {
		halted := kv.RunStrategyHalted
		vm.Spec.RunStrategy = &halted
		vm.Annotations[AnnotationExpiredAt] = leaseEnd
		if err := c.o.Client.Update(ctx, vm); err != nil {
			return err
		}
	}
	// A renewal that lands between the two writes finds the VM halted, not gone; its sbf
	// starts it again on its next pass.
	return c.o.Client.Delete(ctx, vm, client.Preconditions{UID: &vm.UID, ResourceVersion: &vm.ResourceVersion})
}

func where(namespace string) string {
	if namespace == "" {
		return "every namespace"
	}
	return "namespace " + namespace
}
