package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/kubevirt/driver"
)

// A VM whose namespace enforces Pod Security "restricted" cannot start (KubeVirt's launcher
// pod needs privileged): sbf apply says so at once, coded, with what to do, instead of
// waiting out its start timeout on a VMI it calls "pending".
func TestAVMThatPodSecurityStopsIsNamedNotPending(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	restrict(t, s.ns)
	w := newWorkspace(t, s, "")
	began := time.Now()
	_, err := w.apply()
	took := time.Since(began)
	c := coded.Of(err, coded.Unknown)
	steps, _ := c.Details["next_steps"].([]string)
	if c.Code != coded.BackendUnavailable || c.Details["probable_cause"] != "vm_namespace_pod_security" ||
		len(steps) < 2 || !strings.Contains(strings.Join(steps, "\n"), "pod-security.kubernetes.io/enforce=privileged") {
		t.Fatalf("apply in a restricted namespace (after %s): %#v", took, c)
	}
	if !strings.Contains(c.Message, "violates PodSecurity") {
		t.Errorf("the message hides the API server's refusal: %s", c.Message)
	}
	if vms := vmsIn(t, s); len(vms) != 1 || eventsOn(t, s, vms[0].Name)[driver.ReasonStartRefused] == nil {
		t.Errorf("no %s Event on the VM that cannot start", driver.ReasonStartRefused)
	}
	t.Logf("refused after %s (start timeout 1m): %s", took.Round(time.Millisecond), c.Message)
}
