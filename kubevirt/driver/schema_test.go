package driver

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

// The API server enforces KubeVirt's schema, as a cluster with KubeVirt does: what the
// driver writes passes it (the contract), and what KubeVirt would refuse is refused.
func TestTheAPIServerEnforcesKubeVirtsSchema(t *testing.T) {
	kubetest.Need(t, cluster)
	ns := cluster.Namespace(t)
	c, err := client.New(cluster.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vm := func(name string, domain map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"runStrategy": "Halted",
				"template": map[string]any{"spec": map[string]any{"domain": domain}}},
		}}
	}
	ok := vm("fine", map[string]any{"devices": map[string]any{}, "memory": map[string]any{"guest": "1Gi"}})
	if err := c.Create(context.Background(), ok); err != nil {
		t.Fatalf("a valid VM: %v", err)
	}
	for name, domain := range map[string]map[string]any{
		"bad-quantity":  {"devices": map[string]any{}, "memory": map[string]any{"guest": "lots"}},
		"unknown-field": {"devices": map[string]any{}, "cpuz": map[string]any{"cores": 2}},
	} {
		err := c.Create(context.Background(), vm(name, domain), client.FieldValidation("Strict"))
		if err == nil || !strings.Contains(err.Error(), "spec.template.spec.domain") {
			t.Errorf("%s: %v; want a refusal naming the field", name, err)
		}
	}
}
