package integration

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/expiry"
	"github.com/sandboxforge/sbf/state"
)

// passes runs the expiry controller in-process on its own fake clock and lets a test wait
// for a pass made at (or after) a given time.
type passes struct {
	mu      sync.Mutex
	reports []expiry.Report
	clock   *clock.Fake
}

func runExpiry(t *testing.T, namespaces ...string) *passes {
	return runExpiryWith(t, interceptor.Funcs{}, namespaces...)
}

// runExpiryWith runs the controller on a client whose calls funcs may intercept.
func runExpiryWith(t *testing.T, funcs interceptor.Funcs, namespaces ...string) *passes {
	t.Helper()
	real, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: driver.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(real, funcs)
	p := &passes{clock: clock.NewFake(t0)}
	ctrl, err := expiry.New(expiry.Options{Client: c, Namespaces: namespaces, Clock: p.clock, Resync: 10 * time.Minute,
		Retry: time.Second, Logf: t.Logf, OnPass: func(r expiry.Report) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.reports = append(p.reports, r)
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ctrl.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// after waits for a successful pass made at at or later, and returns it.
func (p *passes) after(t *testing.T, at time.Time) expiry.Report {
	t.Helper()
	var got expiry.Report
	waitFor(t, "a pass at "+at.Format(time.RFC3339), func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, r := range p.reports {
			if !r.At.Before(at) && r.Err == nil {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

// advanceTo moves the controller's clock to at, once the controller is asleep on it.
func (p *passes) advanceTo(t *testing.T, at time.Time) expiry.Report {
	t.Helper()
	waitFor(t, "the controller to sleep", func() bool { return p.clock.Waiters() > 0 })
	p.clock.Advance(at.Sub(p.clock.Now()))
	return p.after(t, at)
}

func (s space) vm(t *testing.T, name string) *kv.VirtualMachine {
	t.Helper()
	var vm kv.VirtualMachine
	err := s.admin.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: name}, &vm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &vm
}

// settled is vm's resourceVersion once the stand-in KubeVirt has put its finalizer and
// status on it, so that a later change of version can only be someone else's write.
func (s space) settled(t *testing.T, name string) string {
	t.Helper()
	var rv string
	waitFor(t, name+" to settle", func() bool {
		vm := s.vm(t, name)
		if vm == nil || len(vm.Finalizers) == 0 || vm.Status.PrintableStatus == "" {
			return false
		}
		rv = vm.ResourceVersion
		return true
	})
	return rv
}

// addSbfVM makes a VM labelled as sbf's, halted, with the given lease annotation (none
// when "").
func (s space) addSbfVM(t *testing.T, name, leaseEnd string) {
	t.Helper()
	halted := kv.RunStrategyHalted
	vm := &kv.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns,
		Labels: map[string]string{driver.LabelManagedBy: driver.ManagedBy}, Annotations: map[string]string{}},
		Spec: kv.VirtualMachineSpec{RunStrategy: &halted, Template: &kv.VirtualMachineInstanceTemplateSpec{}}}
	if leaseEnd != "" {
		vm.Annotations[driver.AnnotationLeaseEnd] = leaseEnd
	}
	if err := s.admin.Create(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
}

// A VM made by one sbf that never runs again is deleted by the controller in
// the pass at its lease end, not before; foreign VMs, VMs with no lease annotation still in
// their grace and VMs whose annotation does not parse keep their resourceVersion; the sbf that made the VM
// records the sandbox expired at its next run.
func TestTheControllerExpiresAVMNoSbfRunsFor(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	w := newWorkspace(t, s, "")
	if _, err := w.apply(); err != nil {
		t.Fatal(err)
	}
	vms := w.vms(t)
	if len(vms) != 1 {
		t.Fatalf("after apply: %d VMs", len(vms))
	}
	name := vms[0].Name
	s.addForeign(t, "foreign")
	s.addSbfVM(t, "no-lease", "")
	s.addSbfVM(t, "garbled", "tomorrow at noon")
	untouched := map[string]string{}
	for _, n := range []string{"foreign", "no-lease", "garbled"} {
		untouched[n] = s.settled(t, n)
	}
	// A VM in a namespace the controller is not given is not its business, expired or not.
	other := newSpace(t, quick)
	other.addSbfVM(t, "elsewhere", t0.Format(time.RFC3339))
	elsewhere := other.settled(t, "elsewhere")

	p := runExpiry(t, s.ns)
	rep := p.after(t, t0)
	if rep.Next != t0.Add(time.Hour) || len(rep.Expired) != 0 || len(rep.Garbled) != 1 ||
		!strings.HasPrefix(rep.Garbled[0], s.ns+"/garbled: ") {
		t.Fatalf("first pass: %+v; want the lease end next, the garbled annotation reported", rep)
	}
	if rep := p.advanceTo(t, t0.Add(time.Hour-time.Second)); len(rep.Expired) != 0 || s.vm(t, name) == nil {
		t.Fatalf("a second before the lease end: %+v", rep)
	}
	// The controller sleeps until the lease end itself: advancing the clock to it is what
	// wakes it, and the pass made then deletes the VM.
	rep = p.advanceTo(t, t0.Add(time.Hour))
	if len(rep.Expired) != 1 || rep.Expired[0] != s.ns+"/"+name {
		t.Fatalf("at the lease end: %+v", rep)
	}
	waitFor(t, "the VM and its VMI to go", func() bool { return s.vm(t, name) == nil })
	for n, rv := range untouched {
		if vm := s.vm(t, n); vm == nil || vm.ResourceVersion != rv {
			t.Errorf("%s was touched: resourceVersion %s → %v", n, rv, vm)
		}
	}
	if vm := other.vm(t, "elsewhere"); vm == nil || vm.ResourceVersion != elsewhere {
		t.Errorf("a VM in a namespace not served was touched: %v", vm)
	}

	w.clock.Advance(time.Hour + time.Minute)
	res, err := w.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := res.Recorded("api"); rec.Phase != state.Expired {
		t.Errorf("the laptop's next run records %s; want expired", rec.Phase)
	}
	if vms := w.vms(t); len(vms) != 3 {
		t.Errorf("the laptop's run after the expiry left %d VMs; want the three others only", len(vms))
	}
}

// A renewal by any sbf moves the annotation; the controller follows it instead of the
// lease end it first saw.
func TestTheControllerFollowsARenewal(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	w := newWorkspace(t, s, "")
	if _, err := w.apply(); err != nil {
		t.Fatal(err)
	}
	name := w.vms(t)[0].Name
	p := runExpiry(t, s.ns)
	if rep := p.after(t, t0); rep.Next != t0.Add(time.Hour) {
		t.Fatalf("first pass: %+v", rep)
	}
	w.clock.Advance(30 * time.Minute)
	if _, err := w.apply(); err != nil { // renews: the lease now ends at t0+1h30m
		t.Fatal(err)
	}
	renewed := t0.Add(90 * time.Minute)
	if got := s.vm(t, name).Annotations[driver.AnnotationLeaseEnd]; got != renewed.Format(time.RFC3339) {
		t.Fatalf("after the renewal the annotation reads %s", got)
	}
	waitFor(t, "the controller to see the renewal", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.reports[len(p.reports)-1].Next.Equal(renewed)
	})
	if rep := p.advanceTo(t, t0.Add(time.Hour+time.Minute)); len(rep.Expired) != 0 || s.vm(t, name) == nil {
		t.Fatalf("past the first lease end, inside the renewed one: %+v", rep)
	}
	if rep := p.advanceTo(t, renewed); len(rep.Expired) != 1 {
		t.Fatalf("at the renewed lease end: %+v", rep)
	}
	waitFor(t, "the VM to go", func() bool { return s.vm(t, name) == nil })
}

// The shipped command, on the wall clock: a VM whose lease ends two seconds from now is
// deleted within a second of that end.
func TestTheControllerCommandExpiresOnTime(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	end := time.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	s.addSbfVM(t, "short", end.Format(time.RFC3339))
	cmd := exec.Command(plugin, "controller", "--namespaces", s.ns)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var deleting time.Time
	waitFor(t, "the VM to be deleted", func() bool {
		vm := s.vm(t, "short")
		if vm == nil || vm.DeletionTimestamp != nil {
			deleting = time.Now()
			return true
		}
		return false
	})
	late := deleting.Sub(end)
	t.Logf("deleted %s after its lease end (polling every 20ms)\n%s", late.Round(time.Millisecond), out)
	if late < 0 || late > time.Second {
		t.Errorf("deleted %s after its lease end; want within a second, never before", late)
	}
}

// Someone writes the VM between the controller's read and its deletion: a renewal (the
// lease annotation moved) keeps the VM; any other write (KubeVirt writing the VM's status)
// does not save it, and it goes in that same pass.
func TestAWriteRacingTheExpiry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		write   func(vm *kv.VirtualMachine)
		expires bool
	}{
		{"a renewal wins", func(vm *kv.VirtualMachine) {
			vm.Annotations[driver.AnnotationLeaseEnd] = t0.Add(time.Hour).Format(time.RFC3339)
		}, false},
		{"another write does not", func(vm *kv.VirtualMachine) { vm.Labels["touched"] = "yes" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpace(t, quick)
			s.addSbfVM(t, "racing", t0.Add(-time.Minute).Format(time.RFC3339))
			s.settled(t, "racing")
			var once sync.Once
			p := runExpiryWith(t, interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch,
				obj client.Object, opts ...client.DeleteOption) error {
				once.Do(func() {
					var vm kv.VirtualMachine
					if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &vm); err != nil {
						t.Error(err)
						return
					}
					tc.write(&vm)
					if err := c.Update(ctx, &vm); err != nil {
						t.Error(err)
					}
				})
				return c.Delete(ctx, obj, opts...)
			}}, s.ns)
			rep := p.after(t, t0)
			vm := s.vm(t, "racing")
			if !tc.expires {
				if len(rep.Expired) != 0 || vm == nil || vm.DeletionTimestamp != nil {
					t.Fatalf("renewed while being expired: %+v; the VM: %+v", rep, vm)
				}
				waitFor(t, "a pass that follows the renewal", func() bool {
					p.mu.Lock()
					defer p.mu.Unlock()
					return p.reports[len(p.reports)-1].Next.Equal(t0.Add(time.Hour))
				})
				return
			}
			if len(rep.Expired) != 1 || (vm != nil && vm.DeletionTimestamp == nil) {
				t.Fatalf("expired VM written by someone else in between: %+v; the VM: %+v", rep, vm)
			}
		})
	}
}

// A VM labelled as sbf's that carries no lease end (made by hand, or by an sbf older than
// the lease on create) goes once the grace from its creation is over, and an Event on it
// says why; a VM still in its grace stays.
func TestAVMWithNoLeaseGoesAfterTheGrace(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	s.addSbfVM(t, "unleased", "")
	made := s.vm(t, "unleased").CreationTimestamp.Time
	out := startController(t, s, "--unleased-grace", "3s")
	other := newSpace(t, quick)
	other.addSbfVM(t, "in-grace", "")
	startController(t, other, "--unleased-grace", "1h")
	waitFor(t, "the unleased VM to go", func() bool {
		vm := s.vm(t, "unleased")
		return vm == nil || vm.DeletionTimestamp != nil
	})
	if gone := time.Since(made); gone < 3*time.Second {
		t.Errorf("deleted %s after its creation, inside its 3s grace", gone)
	}
	// An Event is recorded asynchronously (client-go's broadcaster), so it
	// is waited for rather than looked up once.
	var events corev1.EventList
	waitFor(t, "the VM's "+expiry.ReasonNoLease+" Event (controller output:\n"+out.String()+")", func() bool {
		if err := s.admin.List(context.Background(), &events, client.InNamespace(s.ns)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(events.Items, func(ev corev1.Event) bool {
			return ev.InvolvedObject.Name == "unleased" && ev.Reason == expiry.ReasonNoLease
		})
	})
	if vm := other.vm(t, "in-grace"); vm == nil || vm.DeletionTimestamp != nil {
		t.Errorf("a VM inside its grace was deleted")
	}
}
