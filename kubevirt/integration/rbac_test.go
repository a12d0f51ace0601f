package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/expiry"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
	"github.com/sandboxforge/sbf/reconcile"
)

// shipped is deploy/kubevirt's RBAC, its namespaces renamed to the test's: the rules of
// each Role and ClusterRole, by kind and name, and its bindings. shippedRBAC makes its
// Leases where the manifests put them, as kubectl apply -k would.
type shipped struct {
	system, vms space // the controllers' namespace and the VMs'
	rules       map[string][]rbacv1.PolicyRule
	bindings    []rbacv1.RoleBinding // ClusterRoleBindings too, by Kind
}

func shippedRBAC(t *testing.T, vms space) shipped {
	t.Helper()
	sh := shipped{vms: vms, system: space{ns: cluster.Namespace(t), admin: vms.admin, kubeconfig: vms.kubeconfig},
		rules: map[string][]rbacv1.PolicyRule{}}
	for _, u := range manifests(t, sh.system.ns, vms.ns) {
		switch u.GetKind() {
		case "Role", "ClusterRole":
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
				t.Fatal(err)
			}
			sh.rules[u.GetKind()+"/"+u.GetName()] = r.Rules
		case "RoleBinding", "ClusterRoleBinding":
			var b rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
				t.Fatal(err)
			}
			b.Kind = u.GetKind()
			sh.bindings = append(sh.bindings, b)
		case "Lease":
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace()}}
			_, err := kubernetes.NewForConfigOrDie(cluster.Config).CoordinationV1().Leases(u.GetNamespace()).Create(
				context.Background(), l, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return sh
}

// as makes user, bound to what the manifests bind to ServiceAccount sa (of the controllers'
// namespace), in the namespace of each binding, but the roles skip names ("ClusterRole/x").
// A ClusterRoleBinding fails the test: it would let sa act in every namespace.
func (sh shipped) as(t *testing.T, user, sa string, skip ...string) *rest.Config {
	t.Helper()
	// In the groups a token of a ServiceAccount there carries (the admission policy trusts them).
	cfg := cluster.User(t, user, sh.system.ns, nil, "system:serviceaccounts", "system:serviceaccounts:"+sh.system.ns)
	bound := 0
	for _, b := range sh.bindings {
		if !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Name == sa && s.Namespace == sh.system.ns
		}) {
			continue
		}
		if b.Kind != "RoleBinding" {
			t.Fatalf("%s %s binds %s in every namespace; want a RoleBinding where it acts", b.Kind, b.Name, sa)
		}
		role := b.RoleRef.Kind + "/" + b.RoleRef.Name
		rules, ok := sh.rules[role]
		if !ok {
			t.Fatalf("RoleBinding %s/%s names %s, which deploy/kubevirt does not make", b.Namespace, b.Name, role)
		}
		bound++
		if !slices.Contains(skip, role) {
			cluster.Grant(t, user, user+"-"+b.Name, b.Namespace, rules)
		}
	}
	if bound == 0 {
		t.Fatalf("deploy/kubevirt binds nothing to ServiceAccount %s", sa)
	}
	return cfg
}

// Each process runs every one of its paths as a user bound to exactly what deploy/kubevirt
// grants its ServiceAccount, where it grants it, and each is refused what the others may
// do: the controller (under serve-leader, its Lease in the controllers' namespace) deletes a
// VM past its lease and one with none, with their Events, in the VMs' namespace, and may not
// write a VM, delete one elsewhere, nor touch the loop's Lease; the loop (the engine through
// the plugin, and serve-leader) creates, starts, records leases on, stops and deletes a
// sandbox in the VMs' namespace (the VM naming its maker, the loop's user) and leads on its
// Lease, and may not make a VM in its own namespace nor touch the controller's Lease.
// A forbidden call on any path fails it.
func TestTheShippedRBACRunsEveryPathAndNoMore(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	sh := shippedRBAC(t, s)
	sys := sh.system
	ctrlCfg := sh.as(t, "rbac-controller", "sbf-controller")
	loopCfg := sh.as(t, "rbac-loop", "sbf-loop")

	// The loop (first: its workspace runs on a fake clock, days before the controller's).
	w := newWorkspace(t, s, kubetest.Kubeconfig(t, loopCfg))
	if res, err := w.apply(); err != nil || len(res.Warnings) != 0 {
		t.Fatalf("sbf apply as the loop: %v %v", err, res.Warnings)
	}
	if vms := vmsIn(t, s); len(vms) != 1 || vms[0].Annotations[driver.AnnotationLeaseEnd] == "" {
		t.Fatalf("after apply as the loop: %+v", vms)
	} else if by := vms[0].Annotations[driver.AnnotationCreatedBy]; by != "rbac-loop" {
		t.Errorf("the VM says it was made by %q; want the loop's user, rbac-loop", by)
	}
	w.clock.Advance(10 * time.Minute)
	if _, err := w.apply(); err != nil { // a renewal: the lease end moves
		t.Fatalf("sbf apply (renew) as the loop: %v", err)
	}
	vm := vmsIn(t, s)[0]
	for _, reason := range []string{driver.ReasonCreated, driver.ReasonLeaseRecorded} {
		ev := eventsOn(t, s, vm.Name)[reason]
		if ev == nil || ev.ReportingInstance != "rbac-loop" || ev.InvolvedObject.UID != vm.UID {
			t.Errorf("the %s Event on the VM: %+v", reason, ev)
		}
	}
	if _, err := w.converge(reconcile.Options{Intent: reconcile.Destroy{All: true}}); err != nil {
		t.Fatalf("sbf destroy as the loop: %v", err)
	}
	r := startReplicaWith(t, sys, "l1", t.TempDir()+"/acting.log", kubetest.Kubeconfig(t, loopCfg), short)
	waitFor(t, "the loop's replica to lead", func() bool { return leaseHolder(t, sys, "sbf-loop") == "l1" })
	if strings.Contains(strings.ToLower(r.stderr.String()), "forbidden") {
		t.Errorf("the loop's serve-leader was refused a call:\n%s", r.stderr)
	}

	// The controller.
	s.addSbfVM(t, "past", "2026-01-01T00:00:00Z")
	s.addSbfVM(t, "unleased", "")
	cmd := []string{"serve-leader", "--namespace", sys.ns, "--lease", "sbf-controller", "--identity", "c1"}
	cmd = append(append(cmd, short...), "--", plugin, "controller", "--namespaces", s.ns, "--unleased-grace", "2s")
	out := runPlugin(t, kubetest.Kubeconfig(t, ctrlCfg), cmd...)
	waitFor(t, "the controller to delete both VMs", func() bool { return len(vmsIn(t, s)) == 0 })
	reasons := map[string]bool{}
	waitFor(t, "both Events", func() bool {
		var events corev1.EventList
		if err := s.admin.List(context.Background(), &events, client.InNamespace(s.ns)); err != nil {
			t.Fatal(err)
		}
		for _, ev := range events.Items {
			reasons[ev.InvolvedObject.Name+" "+ev.Reason] = true
		}
		return reasons["past "+expiry.ReasonLeaseExpired] && reasons["unleased "+expiry.ReasonNoLease]
	})
	if strings.Contains(strings.ToLower(out.String()), "forbidden") {
		t.Errorf("the controller was refused a call:\n%s", out)
	}
	// sbf (status, apply) reads why a VM it made went: the controller's Event, as the loop.
	d, err := launch(t, s.env(t, clock.Real{}, kubetest.Kubeconfig(t, loopCfg)))
	if err != nil {
		t.Fatal(err)
	}
	if deps, err := d.Departures(context.Background(), []string{"past", "never-there"}); err != nil || len(deps) != 1 ||
		deps[0].Instance != "past" || deps[0].Reason != expiry.ReasonLeaseExpired || !deps[0].Expired ||
		!strings.Contains(deps[0].By, "c1") {
		t.Errorf("why past went, as the loop: %+v, %v; want LeaseExpired by c1", deps, err)
	}

	// And no more.
	ctx := context.Background()
	for _, tc := range []struct {
		who  string
		cfg  *rest.Config
		call func(cs *kubernetes.Clientset, c client.Client) error
	}{
		{"the controller writing a VM", ctrlCfg, func(_ *kubernetes.Clientset, c client.Client) error {
			s.addSbfVM(t, "someones", time.Now().Add(time.Hour).Format(time.RFC3339))
			var vm kv.VirtualMachine
			if err := s.admin.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "someones"}, &vm); err != nil {
				t.Fatal(err)
			}
			vm.Annotations[driver.AnnotationLeaseEnd] = "2026-01-01T00:00:00Z"
			return c.Update(ctx, &vm)
		}},
		{"the controller reading the loop's Lease", ctrlCfg, func(cs *kubernetes.Clientset, _ client.Client) error {
			_, err := cs.CoordinationV1().Leases(sys.ns).Get(ctx, "sbf-loop", metav1.GetOptions{})
			return err
		}},
		{"the loop reading the controller's Lease", loopCfg, func(cs *kubernetes.Clientset, _ client.Client) error {
			_, err := cs.CoordinationV1().Leases(sys.ns).Get(ctx, "sbf-controller", metav1.GetOptions{})
			return err
		}},
		{"the loop making a Lease", loopCfg, func(cs *kubernetes.Clientset, _ client.Client) error {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "another", Namespace: sys.ns}}
			_, err := cs.CoordinationV1().Leases(sys.ns).Create(ctx, l, metav1.CreateOptions{})
			return err
		}},
		{"the controller deleting a VM elsewhere", ctrlCfg, func(_ *kubernetes.Clientset, c client.Client) error {
			sys.addSbfVM(t, "elsewhere", "2026-01-01T00:00:00Z")
			vm := &kv.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: sys.ns}}
			return c.Delete(ctx, vm)
		}},
		{"the loop making a VM in the controllers' namespace", loopCfg, func(_ *kubernetes.Clientset, c client.Client) error {
			halted := kv.RunStrategyHalted
			vm := &kv.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: sys.ns},
				Spec: kv.VirtualMachineSpec{RunStrategy: &halted, Template: &kv.VirtualMachineInstanceTemplateSpec{}}}
			return c.Create(ctx, vm)
		}},
	} {
		c, err := driver.NewClient(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.call(kubernetes.NewForConfigOrDie(tc.cfg), c); !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v; want forbidden", tc.who, err)
		}
	}
}

// runPlugin runs sbf-kubevirt with args on the cluster kubeconfig names, until the test ends.
func runPlugin(t *testing.T, kubeconfig string, args ...string) *testutil.SyncBuffer {
	t.Helper()
	cmd := exec.Command(plugin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("sbf-kubevirt %v said:\n%s", args, out)
		}
	})
	return out
}

// The controller's probes (serve-leader's, as the Deployment points them) fail while its
// passes fail, here because its ClusterRole is not bound, and pass while they succeed.
func TestTheControllersProbesFailWhileItsPassesFail(t *testing.T) {
	for _, tc := range []struct {
		name string
		skip []string
		want int
	}{
		{"bound", nil, http.StatusOK},
		{"its ClusterRole not bound", []string{"ClusterRole/sbf-kubevirt-lease-controller"}, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpace(t, quick)
			sh := shippedRBAC(t, s)
			cfg := sh.as(t, "probes-"+strings.ReplaceAll(tc.name, " ", "-"), "sbf-controller", tc.skip...)
			addrs := freeAddrs(t, 2)
			probes, metrics := addrs[0], addrs[1]
			cmd := []string{"serve-leader", "--namespace", sh.system.ns, "--lease", "sbf-controller", "--identity", "p1",
				"--health-addr", probes, "--command-health", "http://" + metrics + "/healthz"}
			cmd = append(append(cmd, short...), "--", plugin, "controller", "--namespaces", s.ns,
				"--metrics-addr", metrics, "--retry", "200ms")
			out := runPlugin(t, kubetest.Kubeconfig(t, cfg), cmd...)
			var got int
			var body string
			waitFor(t, "the probes to say "+http.StatusText(tc.want), func() bool {
				for _, path := range []string{"/healthz", "/readyz"} {
					res, err := http.Get("http://" + probes + path)
					if err != nil {
						return false
					}
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					got, body = res.StatusCode, string(b)
					if got != tc.want || !strings.Contains(out.String(), "leading") {
						return false
					}
				}
				// The command's own health answers: the probes asked it, not a port not open yet.
				res, err := http.Get("http://" + metrics + "/healthz")
				if err == nil {
					res.Body.Close()
				}
				return err == nil && res.StatusCode == tc.want
			})
			t.Logf("%s: %d %s", tc.name, got, strings.TrimSpace(body))
		})
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	return freeAddrs(t, 1)[0]
}

// freeAddrs is n distinct free loopback addresses: each listener stays open until all are
// chosen, as two chosen one after the other can be the same port (the kernel hands a port
// just freed out again), which made the probes and the metrics share one. A port is free only
// until a child binds it: the tests that pick one this way are not parallel, so no other test
// picks or dials it meanwhile (they run alone, before the parallel tests start).
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}

// eventsOn is the last Event of each reason on the VM named vm in s.
func eventsOn(t *testing.T, s space, vm string) map[string]*corev1.Event {
	t.Helper()
	var events corev1.EventList
	if err := s.admin.List(context.Background(), &events, client.InNamespace(s.ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Event{}
	for i := range events.Items {
		if ev := &events.Items[i]; ev.InvolvedObject.Name == vm {
			out[ev.Reason] = ev
		}
	}
	return out
}
