package integration

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

// Commands reach the guest through the API server's port-forward to the VM's
// virt-launcher pod. This cluster has no kubelet, so the tunnel itself cannot open here;
// what is proven is the way to it: the pod is found by KubeVirt's label, the request goes
// to the API server's pods/portforward of that pod, and RBAC's refusal of it is coded.
func TestExecGoesThroughTheLauncherPodsPortForward(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	rules := []rbacv1.PolicyRule{}
	for _, a := range driver.Needed {
		if a.Resource != "pods/portforward" {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{a.Group}, Resources: []string{a.Resource},
				Verbs: a.Verbs})
		}
	}
	for _, tc := range []struct {
		who, kubeconfig, want string
	}{
		{"an admin", s.kubeconfig, "port-forwarding to pod virt-launcher-"}, // no kubelet answers
		{"a user without pods/portforward", kubetest.Kubeconfig(t, cluster.User(t, "noforward", s.ns, rules)), "forbidden"},
	} {
		d, err := launch(t, s.env(t, clock.Real{}, tc.kubeconfig))
		if err != nil {
			t.Fatal(err)
		}
		name := drivers.InstanceName("ws_c0ffee00aabb", "ssh")
		spec := drivers.Spec{Name: name, CPUs: 1, MemoryGiB: 1, DiskGiB: 5}
		if tc.who == "an admin" {
			if err := d.Create(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			if err := d.Start(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
		}
		_, err = d.Exec(context.Background(), name, drivers.ExecRequest{Command: "true"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("as %s: %v; want %q", tc.who, err, tc.want)
		}
		if tc.who != "an admin" {
			c := coded.Of(err, coded.Unknown)
			if c.Code != coded.BackendUnavailable || c.Details["probable_cause"] != "rbac_forbidden" {
				t.Errorf("as %s: %#v", tc.who, c)
			}
		}
		t.Logf("as %s: %v", tc.who, err)
	}
}
