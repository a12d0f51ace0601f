package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
)

// The plugin of a loop serve-leader runs (SBF_LEADER_* in its environment) writes to the
// cluster only while the Lease names its replica and was renewed within the renew
// deadline: held by another replica, or not renewed since (its supervisor frozen), a
// create is refused, coded not_leading, and makes nothing; held and fresh, it goes ahead.
func TestALoopThatCannotProveItLeadsWritesNothing(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	cs := kubernetes.NewForConfigOrDie(cluster.Config)
	ctx := context.Background()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "sbf-loop", Namespace: s.ns}}
	lease, err := cs.CoordinationV1().Leases(s.ns).Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hold := func(holder string, renewed time.Time) {
		t.Helper()
		lease.Spec.HolderIdentity = &holder
		lease.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
		if lease, err = cs.CoordinationV1().Leases(s.ns).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env := s.env(t, clock.Real{}, s.kubeconfig)
	getenv := env.Getenv
	env.Getenv = func(k string) string {
		switch k {
		case "SBF_LEADER_LEASE":
			return s.ns + "/sbf-loop"
		case "SBF_LEADER_IDENTITY":
			return "me"
		case "SBF_LEADER_RENEW_DEADLINE":
			return "2s"
		}
		return getenv(k)
	}
	d, err := launch(t, env)
	if err != nil {
		t.Fatal(err)
	}
	spec := drivers.Spec{Name: "sbf-fence-api", CPUs: 1, MemoryGiB: 1, DiskGiB: 5}
	for _, tc := range []struct {
		name    string
		holder  string
		renewed time.Duration // ago
	}{{"held by another", "other", 0}, {"not renewed within the deadline", "me", 3 * time.Second}} {
		hold(tc.holder, time.Now().Add(-tc.renewed))
		err := d.Create(ctx, spec)
		var u *drivers.UnavailableError
		if !errors.As(err, &u) || u.ProbableCause != "not_leading" {
			t.Errorf("%s: Create answered %v; want refused, not_leading", tc.name, err)
		}
		if vms := vmsIn(t, s); len(vms) != 0 {
			t.Fatalf("%s: Create made %d VMs", tc.name, len(vms))
		}
	}
	hold("me", time.Now())
	if err := d.Create(ctx, spec); err != nil {
		t.Fatalf("held and renewed: %v", err)
	}
	if vms := vmsIn(t, s); len(vms) != 1 {
		t.Errorf("held and renewed: %d VMs", len(vms))
	}
}
