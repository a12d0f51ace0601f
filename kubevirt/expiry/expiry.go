// Package expiry is the cluster's side of sbf's leases: it deletes every sbf-labelled
// VirtualMachine whose lease annotation (sandboxforge.dev/lease-expires-at) is past, or
// that has carried none for longer than a short grace, in the namespaces it is given, for
// every workspace, from the annotation alone.
//
// A lease is otherwise enforced only by the sbf that holds it, when that sbf runs: a laptop
// that is closed leaves its VM running in the cluster until it opens again. sbf writes the
// annotation with the VM's first write (drivers.Spec.LeaseEnd) and moves it whenever it
// renews or extends the lease (drivers.LeaseRecorder), so following it needs no workspace
// folder and no state file; the laptop's sbf finds the VM gone at its next run and records
// the sandbox expired, as it would have itself. A VM without one was made by hand or by an
// sbf older than that; past UnleasedGrace from its creation it goes too.
//
// The controller only reads and deletes VMs: each deletion is conditional on the version it
// decided on, so a renewal written in between wins. Why a VM went is a Kubernetes Event on
// it (LeaseExpired, NoLease) and a log line.
//
// What is never touched: a VM without sbf's managed-by label (whatever its name), and a VM
// whose annotation does not parse (reported, not deleted: a typo must not destroy someone's
// work).
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

// Reasons of the Events the controller records on a VM it deletes.
const (
	ReasonLeaseExpired = driver.ReasonLeaseExpired
	ReasonNoLease      = driver.ReasonNoLease
)

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
	// UnleasedGrace is how long a VM may carry no lease end after its creation (default 15m:
	// an sbf older than Spec.LeaseEnd wrote it only once the VM ran, within its 10-minute
	// start timeout).
	UnleasedGrace time.Duration
	// MayAct, when set, is asked before every deletion; an error skips it and fails the
	// pass (a replica that cannot prove it holds the controller's Lease: leader.Fence).
	MayAct func(context.Context) error
	// Identity names this replica in the Events it records.
	Identity string
	Logf     func(format string, args ...any)
	// OnPass, when set, is told what each pass did (metrics, tests).
	OnPass func(Report)
}

// Report is one pass over the VMs.
type Report struct {
	At      time.Time
	Expired []string // namespace/name of the VMs deleted, their lease ended or missing
	// Unleased are those of Expired that carried no lease end past UnleasedGrace.
	Unleased []string
	Garbled  []string // namespace/name: annotation, for VMs whose lease end does not parse
	// OverCeiling are the VMs deleted because their owner held more than the namespace's
	// per-owner ceiling (namespace/name).
	OverCeiling []string
	Watched     int // sbf-labelled VMs with a lease end still ahead
	Next        time.Time
	Err         error
	// Held counts, by owner (driver.HeldBy; "" for none), the sbf VMs the pass left, nil
	// when a namespace could not be listed (a partial count would read as VMs given up);
	// Gone counts, by owner, the VMs it deleted (their lease ended or missing, or past the
	// owner's ceiling).
	Held, Gone map[string]int
}

// gone counts a VM the pass deleted against its owner.
func (r *Report) gone(vm *kv.VirtualMachine) {
	if r.Gone == nil {
		r.Gone = map[string]int{}
	}
	r.Gone[driver.HeldBy(vm)]++
}

// held counts what the pass left of kept (those it did not delete past a ceiling), by owner.
func (r *Report) held(kept []*kv.VirtualMachine) {
	over := map[string]bool{}
	for _, key := range r.OverCeiling {
		over[key] = true
	}
	for _, vm := range kept {
		if !over[vm.Namespace+"/"+vm.Name] {
			r.Held[driver.HeldBy(vm)]++
		}
	}
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
	if o.UnleasedGrace <= 0 {
		o.UnleasedGrace = 15 * time.Minute
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
	var kept []*kv.VirtualMachine
	listed := true
	for _, ns := range namespaces {
		var vms kv.VirtualMachineList
		err := c.o.Client.List(ctx, &vms, client.InNamespace(ns),
			client.MatchingLabels{driver.LabelManagedBy: driver.ManagedBy})
		if err != nil {
			errs = append(errs, fmt.Errorf("listing sbf's VirtualMachines in %s: %w", where(ns), err))
			listed = false
			continue
		}
		var stay []*kv.VirtualMachine
		for i := range vms.Items {
			if c.one(ctx, &vms.Items[i], &rep, &errs) {
				stay = append(stay, &vms.Items[i])
			}
		}
		c.ceilings(ctx, stay, &rep, &errs)
		kept = append(kept, stay...)
	}
	if listed {
		rep.Held = map[string]int{}
		rep.held(kept)
	}
	sort.Strings(rep.Expired)
	sort.Strings(rep.OverCeiling)
	sort.Strings(rep.Garbled)
	sort.Strings(rep.Unleased)
	rep.Err = errors.Join(errs...)
	if rep.Err != nil {
		c.o.Logf("%v", rep.Err)
	}
	return rep
}

// one decides for a single VM, as the list showed it, and says whether it stays.
func (c *Controller) one(ctx context.Context, vm *kv.VirtualMachine, rep *Report, errs *[]error) bool {
	key := vm.Namespace + "/" + vm.Name
	// The list selects on the label already; checking again costs nothing and keeps the
	// promise whatever the selector does.
	if vm.Labels[driver.LabelManagedBy] != driver.ManagedBy || vm.DeletionTimestamp != nil {
		return false
	}
	raw, ok := vm.Annotations[driver.AnnotationLeaseEnd]
	var end time.Time
	reason, why := ReasonLeaseExpired, "its lease ended "+raw
	if !ok {
		// No lease: a VM made by hand or by an older sbf; it gets the grace from its creation.
		end = vm.CreationTimestamp.Add(c.o.UnleasedGrace)
		reason = ReasonNoLease
		why = fmt.Sprintf("it carried no lease end (%s) for %s since its creation", driver.AnnotationLeaseEnd,
			c.o.UnleasedGrace)
	} else {
		var err error
		if end, err = time.Parse(time.RFC3339, raw); err != nil {
			c.garbledVM(vm, key, raw, rep)
			return true
		}
	}
	delete(c.garbled, key)
	if rep.At.Before(end) {
		rep.Watched++
		if rep.Next.IsZero() || end.Before(rep.Next) {
			rep.Next = end
		}
		return true
	}
	switch err := c.expire(ctx, vm, raw, ok); {
	case err == nil:
		rep.Expired = append(rep.Expired, key)
		rep.gone(vm)
		if !ok {
			rep.Unleased = append(rep.Unleased, key)
		}
		c.o.Logf("VirtualMachine %s: deleted: %s", key, why)
		c.record(ctx, vm, reason, "sbf-kubevirt controller deleted the VirtualMachine: "+why)
	case errors.Is(err, errMoved) || apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		// Someone wrote it since the list (a renewal, most likely) or deleted it: the watch
		// brings the next pass, which reads it afresh.
		c.wake()
	default:
		*errs = append(*errs, fmt.Errorf("expiring VirtualMachine %s: %w", key, err))
		return true
	}
	return false
}

func (c *Controller) garbledVM(vm *kv.VirtualMachine, key, raw string, rep *Report) {
	rep.Garbled = append(rep.Garbled, key+": "+raw)
	if c.garbled[key] != vm.ResourceVersion {
		c.garbled[key] = vm.ResourceVersion
		c.o.Logf("VirtualMachine %s: annotation %s=%q is not an RFC 3339 time; left running "+
			"(the owner's sbf renews it, or fix it: kubectl -n %s annotate vm %s %s=...)",
			key, driver.AnnotationLeaseEnd, raw, vm.Namespace, vm.Name, driver.AnnotationLeaseEnd)
	}
}

// errMoved is a lease annotation that moved (a renewal) or a VM that went while expiring.
var errMoved = errors.New("the VM changed its lease or went since it was read")

// expire deletes vm, conditional on the version it read: a renewal written in between makes
// the deletion fail, never the VM go. A conflict caused by anything else (KubeVirt writes the
// VM's status) is no reason to keep the VM: it is read again and, its lease end unmoved
// (still absent for one that had none), deleted again.
func (c *Controller) expire(ctx context.Context, vm *kv.VirtualMachine, leaseEnd string, leased bool) error {
	for attempt := 0; ; attempt++ {
		if c.o.MayAct != nil {
			if err := c.o.MayAct(ctx); err != nil {
				return fmt.Errorf("not deleting: %w", err)
			}
		}
		err := c.o.Client.Delete(ctx, vm, client.Preconditions{UID: &vm.UID, ResourceVersion: &vm.ResourceVersion})
		if !apierrors.IsConflict(err) || attempt == 4 {
			return err
		}
		fresh := &kv.VirtualMachine{}
		if err := c.o.Client.Get(ctx, client.ObjectKeyFromObject(vm), fresh); err != nil {
			return err
		}
		end, has := fresh.Annotations[driver.AnnotationLeaseEnd]
		if fresh.UID != vm.UID || fresh.DeletionTimestamp != nil ||
			fresh.Labels[driver.LabelManagedBy] != driver.ManagedBy || end != leaseEnd || has != leased {
			return errMoved
		}
		vm = fresh
	}
}

// record leaves an Event on vm saying why it went (kubectl describe, kubectl get events),
// best effort: the deletion is done, and the log says it too.
func (c *Controller) record(ctx context.Context, vm *kv.VirtualMachine, reason, message string) {
	src := driver.EventSource{Component: driver.ControllerComponent, Instance: c.o.Identity, Clock: c.o.Clock}
	if err := driver.RecordEvent(ctx, c.o.Client, src, vm, reason, message); err != nil {
		c.o.Logf("recording why %s/%s went (an Event): %v", vm.Namespace, vm.Name, err)
	}
}

func where(namespace string) string {
	if namespace == "" {
		return "every namespace"
	}
	return "namespace " + namespace
}
