package driver

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

func checks(d drivers.Diagnosis) map[string]drivers.Check {
	out := map[string]drivers.Check{}
	for _, c := range d.Checks {
		out[c.Name] = c
	}
	return out
}

func doctorAs(t *testing.T, ns string, cfg *rest.Config) drivers.Diagnosis {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{Getenv: func(k string) string {
		return map[string]string{"SBF_KUBEVIRT_NAMESPACE": ns}[k]
	}, Config: cfg, Client: c})
	if err != nil {
		t.Fatal(err)
	}
	return d.Diagnose(context.Background(), nil)
}

func TestDoctor(t *testing.T) {
	kubetest.Need(t, cluster)
	ns := cluster.Namespace(t)

	admin := doctorAs(t, ns, cluster.Config)
	if !admin.Usable || len(admin.Checks) != 4 {
		t.Errorf("as an admin: %+v", admin)
	}

	nobody := doctorAs(t, ns, cluster.User(t, "doctor-nobody", ns, nil))
	c := checks(nobody)
	if nobody.Usable || c["api"].Status != drivers.CheckOK || c["kubevirt"].Status != drivers.CheckOK {
		t.Errorf("as a user with no rights: %+v", nobody)
	}
	if r := c["rbac"]; r.Status != drivers.CheckFail ||
		!strings.Contains(r.Detail, "create virtualmachines.kubevirt.io") ||
		!strings.Contains(r.Detail, "create pods/portforward") || len(r.NextSteps) == 0 {
		t.Errorf("rbac check: %+v", r)
	}
	if n := c["namespace"]; n.Status != drivers.CheckWarn ||
		!strings.Contains(n.NextSteps[0], "kubectl create namespace") {
		t.Errorf("namespace check: %+v", n)
	}

	// Exactly the verbs deploy/kubevirt/rbac.yaml grants are enough.
	var rules []rbacv1.PolicyRule
	for _, a := range Needed {
		rule := rbacv1.PolicyRule{APIGroups: []string{a.Group}, Resources: []string{a.Resource}, Verbs: a.Verbs}
		if a.Name != "" {
			rule.ResourceNames = []string{a.Name}
		}
		rules = append(rules, rule)
	}
	granted := doctorAs(t, ns, cluster.User(t, "doctor-granted", ns, rules))
	if !granted.Usable {
		t.Errorf("with the Role's rules: %+v", granted)
	}
	missing := doctorAs(t, "no-such-namespace", cluster.User(t, "doctor-elsewhere", ns, rules))
	if c := checks(missing)["namespace"]; c.Status != drivers.CheckWarn {
		t.Errorf("another namespace, which this user may not read: %+v", c)
	}

	down := rest.CopyConfig(cluster.Config)
	down.Host = "https://127.0.0.1:1"
	gone := doctorAs(t, ns, down)
	if c := checks(gone)["api"]; gone.Usable || c.Status != drivers.CheckFail || len(c.NextSteps) == 0 {
		t.Errorf("with no API server: %+v", gone)
	}
}

// KubeVirt's CRDs outlive KubeVirt: with them served but no virt-api (the stand-in's
// group gone), doctor says KubeVirt is not running, rather than "usable".
func TestDoctorKnowsKubeVirtIsNotRunning(t *testing.T) {
	kubetest.Need(t, cluster)
	ns := cluster.Namespace(t)
	ctx := context.Background()
	crds := apiextclient.NewForConfigOrDie(cluster.Config).ApiextensionsV1().CustomResourceDefinitions()
	standin, err := crds.Get(ctx, "standins.subresources.kubevirt.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	disc := discovery.NewDiscoveryClientForConfigOrDie(cluster.Config)
	served := func() bool {
		_, err := disc.ServerResourcesForGroupVersion("subresources.kubevirt.io/v1")
		return err == nil
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		for i := 0; !cond(); i++ {
			if i == 600 {
				t.Fatalf("waited a minute for %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := crds.Delete(ctx, standin.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		standin.ResourceVersion = ""
		until("the stand-in's CRD to go", func() bool {
			_, err := crds.Get(ctx, standin.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		if _, err := crds.Create(ctx, standin, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		until("virt-api's stand-in to be served again", served)
	})
	until("virt-api's stand-in to go", func() bool { return !served() })

	diag := doctorAs(t, ns, cluster.Config)
	c := checks(diag)["kubevirt"]
	if diag.Usable || c.Status != drivers.CheckFail || !strings.Contains(c.Detail, "KubeVirt is not running") ||
		len(c.NextSteps) == 0 {
		t.Errorf("with KubeVirt's CRDs but no virt-api: usable %v, %+v", diag.Usable, c)
	}
}
