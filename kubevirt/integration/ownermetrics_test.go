package integration

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kv "kubevirt.io/api/core/v1"

	"github.com/sandboxforge/sbf/kubevirt/driver"
)

// The controller's metrics say how many VMs each owner holds and how many of each owner's
// it deleted, on its metrics endpoint, in a bounded number of series: with
// --max-owner-series 2, the two owners holding most are named (a VM naming no owner counts
// under owner="") and the rest summed as _other; the first two owners whose VMs were
// deleted keep their series, later ones count as _other.
func TestTheControllerCountsEachOwnersVMs(t *testing.T) {
	s := newSpace(t, quick)
	ahead, past := time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "2026-01-01T00:00:00Z"
	for _, vm := range []struct{ name, owner, end string }{
		{"a1", "alice", ahead}, {"a2", "alice", ahead}, {"a3", "alice", past},
		{"b1", "bob", past}, {"c1", "carol", ahead}, {"d1", "dave", ahead}, {"e1", "erin", ahead},
		{"x1", "xavier", past}, {"n1", "", ahead},
	} {
		s.addOwnedVM(t, vm.name, vm.owner, vm.end)
	}
	metrics := freeAddr(t)
	startController(t, s, "--metrics-addr", metrics, "--max-owner-series", "2")
	var text string
	waitFor(t, "the controller to delete the three VMs past their lease", func() bool {
		res, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		text = string(b)
		return strings.Contains(text, "\nsbf_expiry_expired_total 3\n") && strings.Contains(text, "sbf_owner_vms")
	})
	owners := regexp.MustCompile(`(?m)^sbf_owner_\w+\{.*$`).FindAllString(text, -1)
	want := []string{
		`sbf_owner_expired_total{owner="_other"} 1`,
		`sbf_owner_expired_total{owner="alice"} 1`,
		`sbf_owner_expired_total{owner="bob"} 1`,
		`sbf_owner_vms{owner=""} 1`,
		`sbf_owner_vms{owner="_other"} 3`,
		`sbf_owner_vms{owner="alice"} 2`,
	}
	if strings.Join(owners, "\n") != strings.Join(want, "\n") {
		t.Errorf("the per-owner series:\n%s\nwant:\n%s\nall:\n%s", strings.Join(owners, "\n"), strings.Join(want, "\n"), text)
	}
}

// addOwnedVM is an sbf VM in s made by owner ("": naming none) whose lease ends at end.
func (s space) addOwnedVM(t *testing.T, name, owner, end string) {
	t.Helper()
	halted := kv.RunStrategyHalted
	vm := &kv.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns,
		Labels:      map[string]string{driver.LabelManagedBy: driver.ManagedBy},
		Annotations: map[string]string{driver.AnnotationLeaseEnd: end}},
		Spec: kv.VirtualMachineSpec{RunStrategy: &halted, Template: &kv.VirtualMachineInstanceTemplateSpec{}}}
	if owner != "" {
		vm.Annotations[driver.AnnotationCreatedBy] = owner
	}
	if err := s.admin.Create(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
}
