package driver

import (
	"os"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

// deploy/kubevirt/rbac.yaml's Role grants what the driver uses: a user bound to it alone
// passes sbf doctor.
func TestTheShippedRoleIsEnough(t *testing.T) {
	kubetest.Need(t, cluster)
	data, err := os.ReadFile("../../deploy/kubevirt/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.Role
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var r rbacv1.Role
		if err := yaml.Unmarshal([]byte(doc), &r); err == nil && r.Kind == "Role" {
			role = &r
		}
	}
	if role == nil {
		t.Fatal("rbac.yaml has no Role")
	}
	ns := cluster.Namespace(t)
	diag := doctorAs(t, ns, cluster.User(t, "shipped-role", ns, role.Rules))
	if !diag.Usable {
		t.Errorf("a user bound to the shipped Role: %+v", diag)
	}
}
