package driver

import (
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

// shippedRole is the Role named name in deploy/kubevirt/rbac.yaml.
func shippedRole(t *testing.T, name string) *rbacv1.Role {
	t.Helper()
	data, err := os.ReadFile("../../deploy/kubevirt/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var r rbacv1.Role
		if err := yaml.Unmarshal([]byte(doc), &r); err == nil && r.Kind == "Role" && r.Name == name {
			return &r
		}
	}
	t.Fatalf("rbac.yaml has no Role %s", name)
	return nil
}

// deploy/kubevirt/rbac.yaml's Role grants what the driver uses: a user bound to it alone
// passes sbf doctor.
func TestTheShippedRoleIsEnough(t *testing.T) {
	kubetest.Need(t, cluster)
	role := shippedRole(t, "sbf-kubevirt")
	ns := cluster.Namespace(t)
	diag := doctorAs(t, ns, cluster.User(t, "shipped-role", ns, role.Rules))
	if !diag.Usable {
		t.Errorf("a user bound to the shipped Role: %+v", diag)
	}
}

// ... and nothing more: the Role's rules are exactly Needed, verb for verb, naming no
// other resource (a Lease, say: the loop's election has a Role of its own).
func TestTheShippedRoleIsExactlyWhatTheDriverUses(t *testing.T) {
	role := shippedRole(t, "sbf-kubevirt")
	granted := map[string][]string{}
	for _, r := range role.Rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, n := range names {
					key := g + "/" + res + "/" + n
					granted[key] = append(granted[key], r.Verbs...)
				}
			}
		}
	}
	for _, a := range Needed {
		key := a.Group + "/" + a.Resource + "/" + a.Name
		got := slices.Sorted(slices.Values(granted[key]))
		if want := slices.Sorted(slices.Values(a.Verbs)); !slices.Equal(got, want) {
			t.Errorf("%s: the Role grants %v; the driver uses %v", key, got, want)
		}
		delete(granted, key)
	}
	for key, verbs := range granted {
		t.Errorf("%s: the Role grants %v, which the driver never uses", key, verbs)
	}
}
