package driver

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// policyReader serves one sbf-policy ConfigMap holding data (nil: none).
type policyReader struct {
	client.Reader
	data map[string]string
}

func (r policyReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.data == nil || key.Name != PolicyConfigMap {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	obj.(*corev1.ConfigMap).Data = r.data
	return nil
}

// A ceiling that does not parse is an error naming its key, never "no ceiling": the
// operator's typo must not lift it.
func TestOwnerCeilingsParseOrRefuse(t *testing.T) {
	for _, c := range []struct {
		data map[string]string
		want OwnerCeilings
		bad  string // the key an error names
	}{
		{data: nil},
		{data: map[string]string{}},
		{data: map[string]string{PolicyMaxPerOwner: "3", PolicyMaxCPUsPerOwner: " 8 ", PolicyMaxMemoryPerOwner: "16Gi"},
			want: OwnerCeilings{MaxVMs: 3, MaxCPUs: 8, MaxMemoryBytes: 16 << 30}},
		{data: map[string]string{PolicyMaxMemoryPerOwner: "1536Mi"}, want: OwnerCeilings{MaxMemoryBytes: 1536 << 20}},
		{data: map[string]string{PolicyMaxPerOwner: "three"}, bad: PolicyMaxPerOwner},
		{data: map[string]string{PolicyMaxCPUsPerOwner: "-1"}, bad: PolicyMaxCPUsPerOwner},
		{data: map[string]string{PolicyMaxMemoryPerOwner: "lots"}, bad: PolicyMaxMemoryPerOwner},
		{data: map[string]string{PolicyMaxMemoryPerOwner: "-1Gi"}, bad: PolicyMaxMemoryPerOwner},
	} {
		got, err := ReadOwnerPolicy(context.Background(), policyReader{data: c.data}, "vms")
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%v: %+v, %v; want an error naming %s", c.data, got, err, c.bad)
			}
			continue
		}
		if err != nil || got.OwnerCeilings != c.want || got.Exceptions != nil {
			t.Errorf("%v: %+v, %v; want %+v", c.data, got, err, c.want)
		}
	}
}

// An owner's use passes the ceilings it exceeds, each named; a zero ceiling is none.
func TestOverNamesEachCeilingPassed(t *testing.T) {
	c := OwnerCeilings{MaxVMs: 2, MaxCPUs: 4, MaxMemoryBytes: 8 << 30}
	for _, u := range []struct {
		use  OwnerUse
		want string
	}{
		{OwnerUse{2, 4, 8 << 30}, ""},
		{OwnerUse{3, 4, 8 << 30}, "vms"},
		{OwnerUse{1, 5, 9 << 30}, "cpus memory"},
		{OwnerUse{9, 99, 99 << 30}, "vms cpus memory"},
	} {
		if got := strings.Join(c.Over(u.use), " "); got != u.want {
			t.Errorf("Over(%+v) = %q, want %q", u.use, got, u.want)
		}
	}
	if over := (OwnerCeilings{}).Over(OwnerUse{99, 99, 99 << 30}); over != nil {
		t.Errorf("no ceilings: over %v", over)
	}
}

// An owner-exceptions line replaces, for its owner, the keys it names; the others stay the
// namespace's. A line that does not parse is an error naming its line, never no ceiling.
func TestAnOwnersExceptionReplacesTheKeysItNames(t *testing.T) {
	loop := "system:serviceaccount:sbf-system:sbf-loop"
	data := map[string]string{PolicyMaxPerOwner: "3", PolicyMaxCPUsPerOwner: "8", PolicyMaxMemoryPerOwner: "16Gi",
		PolicyOwnerExceptions: "# the in-cluster loop runs the team's shared sandboxes\n\n" + loop +
			" max-vms-per-owner=20 max-memory-per-owner=64Gi\nalice max-cpus-per-owner=0\n"}
	p, err := ReadOwnerPolicy(context.Background(), policyReader{data: data}, "vms")
	if err != nil {
		t.Fatal(err)
	}
	for owner, want := range map[string]OwnerCeilings{
		loop:    {MaxVMs: 20, MaxCPUs: 8, MaxMemoryBytes: 64 << 30},
		"alice": {MaxVMs: 3, MaxCPUs: 0, MaxMemoryBytes: 16 << 30},
		"bob":   {MaxVMs: 3, MaxCPUs: 8, MaxMemoryBytes: 16 << 30},
	} {
		if got := p.For(owner); got != want {
			t.Errorf("For(%s) = %+v, want %+v", owner, got, want)
		}
	}
	for _, bad := range []string{"alice", "alice max-vms-per-owner", "alice cpus=2", "alice max-vms-per-owner=x",
		"alice max-vms-per-owner=1\nalice max-vms-per-owner=2", "bob max-memory-per-owner=lots"} {
		data[PolicyOwnerExceptions] = bad
		if _, err := ReadOwnerPolicy(context.Background(), policyReader{data: data}, "vms"); err == nil ||
			!strings.Contains(err.Error(), PolicyOwnerExceptions+" line") {
			t.Errorf("owner-exceptions %q: %v; want an error naming its line", bad, err)
		}
	}
}

// A VM is held by its claimer from the claim on, by its maker from its creation: a spare made
// long ago and claimed now is the claimer's newest holding (the controller deletes an owner's
// newest past the ceilings), and a claim that does not say when counts as newest of all.
func TestAVMIsHeldFromItsClaim(t *testing.T) {
	made := metav1.NewTime(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	claim := made.Add(time.Hour)
	vm := func(annotations map[string]string) *kv.VirtualMachine {
		return &kv.VirtualMachine{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: made, Annotations: annotations}}
	}
	owner := `{"workspace_id":"ws_1","sandbox":"api","spare":true,"since":"` + claim.Format(time.RFC3339) + `"}`
	cases := []struct {
		vm        *kv.VirtualMachine
		holder    string
		heldSince time.Time
		what      string
	}{
		{vm(map[string]string{AnnotationCreatedBy: "alice"}), "alice", made.Time, "made"},
		{vm(map[string]string{AnnotationCreatedBy: "alice", AnnotationOwner: owner}), "alice", made.Time,
			"adopted by its maker"},
		{vm(map[string]string{AnnotationCreatedBy: "alice", AnnotationOwner: owner, AnnotationClaimedBy: "bob"}),
			"bob", claim, "claimed"},
		{vm(map[string]string{AnnotationCreatedBy: "alice", AnnotationClaimedBy: "bob"}), "bob",
			time.Unix(1<<62, 0), "claimed, not saying when"},
	}
	for _, c := range cases {
		if got, since := HeldBy(c.vm), HeldSince(c.vm); got != c.holder || !since.Equal(c.heldSince) {
			t.Errorf("%s: held by %q since %s; want %q since %s", c.what, got, since, c.holder, c.heldSince)
		}
	}
}
