package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
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

	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/expiry"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
	"github.com/sandboxforge/sbf/reconcile"
)

// shipped reads deploy/kubevirt's rules by kind and name, and makes its Leases in s.ns as
// kubectl apply -k would.
type shipped struct {
	rules map[string][]rbacv1.PolicyRule
}

func shippedRBAC(t *testing.T, s space) shipped {
	t.Helper()
	sh := shipped{rules: map[string][]rbacv1.PolicyRule{}}
	for _, u := range manifests(t, s.ns) {
		switch u.GetKind() {
		case "Role", "ClusterRole":
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
				t.Fatal(err)
			}
			sh.rules[u.GetKind()+"/"+u.GetName()] = r.Rules
		case "Lease":
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: s.ns}}
			_, err := kubernetes.NewForConfigOrDie(cluster.Config).CoordinationV1().Leases(s.ns).Create(
				context.Background(), l, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return sh
}

func (sh shipped) of(t *testing.T, names ...string) []rbacv1.PolicyRule {
	t.Helper()
	var out []rbacv1.PolicyRule
	for _, n := range names {
		r, ok := sh.rules[n]
		if !ok {
			t.Fatalf("deploy/kubevirt has no %s", n)
		}
		out = append(out, r...)
	}
	return out
}

// Each process runs every one of its paths as a user bound to exactly what deploy/kubevirt
// grants its ServiceAccount, and each is refused what the others may do: the controller
// (under serve-leader, its Lease made by the manifests) deletes a VM past its lease and one
// with none, with their Events, and may not write a VM nor touch the loop's Lease; the loop
// (the engine through the plugin, and serve-leader) creates, starts, records leases on,
// stops and deletes a sandbox (the VM naming its maker, the loop's user) and leads on its
// Lease, and may not touch the controller's.
// A forbidden call on any path fails it.
func TestTheShippedRBACRunsEveryPathAndNoMore(t *testing.T) {
	s := newSpace(t, quick)
	sh := shippedRBAC(t, s)
	ctrlCfg := cluster.User(t, "rbac-controller", s.ns,
		sh.of(t, "ClusterRole/sbf-kubevirt-lease-controller", "Role/sbf-controller-election"))
	loopCfg := cluster.User(t, "rbac-loop", s.ns, sh.of(t, "Role/sbf-kubevirt", "Role/sbf-loop-election"))

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
	if _, err := w.converge(reconcile.Options{Intent: reconcile.Destroy{All: true}}); err != nil {
		t.Fatalf("sbf destroy as the loop: %v", err)
	}
	r := startReplicaWith(t, s, "l1", t.TempDir()+"/acting.log", kubetest.Kubeconfig(t, loopCfg), short)
	waitFor(t, "the loop's replica to lead", func() bool { return leaseHolder(t, s, "sbf-loop") == "l1" })
	if strings.Contains(strings.ToLower(r.stderr.String()), "forbidden") {
		t.Errorf("the loop's serve-leader was refused a call:\n%s", r.stderr)
	}

	// The controller.
	s.addSbfVM(t, "past", "2026-01-01T00:00:00Z")
	s.addSbfVM(t, "unleased", "")
	cmd := []string{"serve-leader", "--namespace", s.ns, "--lease", "sbf-controller", "--identity", "c1"}
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
			_, err := cs.CoordinationV1().Leases(s.ns).Get(ctx, "sbf-loop", metav1.GetOptions{})
			return err
		}},
		{"the loop reading the controller's Lease", loopCfg, func(cs *kubernetes.Clientset, _ client.Client) error {
			_, err := cs.CoordinationV1().Leases(s.ns).Get(ctx, "sbf-controller", metav1.GetOptions{})
			return err
		}},
		{"the loop making a Lease", loopCfg, func(cs *kubernetes.Clientset, _ client.Client) error {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "another", Namespace: s.ns}}
			_, err := cs.CoordinationV1().Leases(s.ns).Create(ctx, l, metav1.CreateOptions{})
			return err
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
		name  string
		roles []string
		want  int
	}{
		{"bound", []string{"ClusterRole/sbf-kubevirt-lease-controller", "Role/sbf-controller-election"}, http.StatusOK},
		{"its ClusterRole not bound", []string{"Role/sbf-controller-election"}, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpace(t, quick)
			sh := shippedRBAC(t, s)
			cfg := cluster.User(t, "probes-"+strings.ReplaceAll(tc.name, " ", "-"), s.ns, sh.of(t, tc.roles...))
			probes, metrics := freeAddr(t), freeAddr(t)
			cmd := []string{"serve-leader", "--namespace", s.ns, "--lease", "sbf-controller", "--identity", "p1",
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
