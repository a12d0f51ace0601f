package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// A pool of oneSandbox's shape, kept ready with no sandbox of its own.
const teamPool = `[vm]
driver = "kubevirt"
cpus = 1
memory_gib = 1
disk_gib = 5
ttl = "1h"

[pool.team]
size = 1
runtime = false
`

// A spare in the team's namespace is anyone's to claim: alice's pool keeps one, bob's `sbf
// up` of that shape adopts it, and the VM becomes bob's (claimed-by, counted against his
// ceiling of one, listed as his), while it still names alice as its maker. With bob at his
// ceiling, his next sandbox may not claim alice's refilled spare (coded, nothing claimed).
// Claiming adds an instance to the claimer's laptop: carol, whose own ceiling is five but
// whose laptop is capped at one instance, claims one spare and is refused the next there.
// The admission policy lets claimed-by be set only once, by the claimer, on a ready spare.
func TestATeammatesSpareIsClaimedByWhoeverAdoptsIt(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	sh := shippedRBAC(t, s)
	shippedPolicy(t, sh, map[string]string{driver.PolicyMaxPerOwner: "1",
		driver.PolicyOwnerExceptions: "carol max-vms-per-owner=5"})
	role := sh.rules["Role/sbf-kubevirt"]
	aliceCfg, bobCfg := cluster.User(t, "alice", s.ns, role), cluster.User(t, "bob", s.ns, role)
	alice, bob := kubetest.Kubeconfig(t, aliceCfg), kubetest.Kubeconfig(t, bobCfg)
	aliceAPI, err := driver.NewClient(aliceCfg)
	if err != nil {
		t.Fatal(err)
	}
	bobAPI, err := driver.NewClient(bobCfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the admission policy to refuse a VM made claimed", func() bool {
		vm := forged(s.ns, "made-claimed", "alice")
		vm.Annotations[driver.AnnotationClaimedBy] = "alice"
		return apierrors.IsInvalid(aliceAPI.Create(context.Background(), vm, client.DryRunAll))
	})
	now := func(w *workspace) *workspace { w.clock.Advance(time.Since(t0)); return w }
	pool := now(newWorkspace(t, s, alice))
	if err := os.WriteFile(filepath.Join(pool.root, spec.FileName), []byte(teamPool), 0o644); err != nil {
		t.Fatal(err)
	}
	fill := func() *kv.VirtualMachine {
		t.Helper()
		if _, err := pool.converge(reconcile.Options{Intent: reconcile.FillPools{}}); err != nil {
			t.Fatalf("alice's pool: %v", err)
		}
		for _, vm := range vmsIn(t, s) {
			if _, spare := vm.Annotations[driver.AnnotationSpare]; spare && vm.Annotations[driver.AnnotationOwner] == "" {
				return &vm
			}
		}
		t.Fatalf("alice's pool made no ready spare: %v", heldBy(t, s))
		return nil
	}
	spare := fill()

	if _, err := now(newWorkspace(t, s, bob)).apply(); err != nil {
		t.Fatalf("bob's sandbox, with alice's spare of its shape ready: %v", err)
	}
	var claimed kv.VirtualMachine
	if err := s.admin.Get(context.Background(), client.ObjectKeyFromObject(spare), &claimed); err != nil {
		t.Fatalf("alice's spare after bob's apply: %v", err)
	}
	if a := claimed.Annotations; a[driver.AnnotationClaimedBy] != "bob" || a[driver.AnnotationCreatedBy] != "alice" ||
		a[driver.AnnotationOwner] == "" || driver.HeldBy(&claimed) != "bob" {
		t.Fatalf("alice's spare after bob's apply: %v; want it claimed by bob, made by alice", claimed.Annotations)
	}
	if got := heldBy(t, s); got["bob"] != 1 || got["alice"] != 0 {
		t.Errorf("VMs by owner: %v; want bob's one", got)
	}
	holders := exec.Command(plugin, "holders", "--namespace", s.ns, "--json")
	holders.Env = append(os.Environ(), "KUBECONFIG="+alice)
	out, err := holders.Output()
	var h driver.Holdings
	if err == nil {
		err = json.Unmarshal(out, &h)
	}
	if err != nil || h.ByOwner["bob"] != 1 || h.ByOwner["alice"] != 0 {
		t.Errorf("sbf-kubevirt holders as alice: %v\n%s", err, out)
	}

	// The claim is bob's, once: alice, its maker, may not take it back, directly or by making it
	// look like a spare again; and nobody takes a VM that is no ready spare.
	refused(t, "alice taking back the spare bob claimed", aliceAPI, &claimed, func(a map[string]string) {
		a[driver.AnnotationClaimedBy] = "alice"
	})
	refused(t, "alice removing the sandbox bob claimed it for", aliceAPI, &claimed, func(a map[string]string) {
		delete(a, driver.AnnotationOwner)
	})
	refused(t, "alice marking bob's VM a spare again", aliceAPI, &claimed, func(a map[string]string) {
		a[driver.AnnotationSpare] = `{"pool":"again"}`
	})
	inUse := forged(s.ns, "alices-own", "alice")
	if err := aliceAPI.Create(context.Background(), inUse); err != nil {
		t.Fatal(err)
	}
	refused(t, "bob marking alice's VM a spare", bobAPI, inUse, func(a map[string]string) {
		a[driver.AnnotationSpare] = `{"pool":"mine-now"}`
	})
	refused(t, "bob claiming alice's VM, no spare", bobAPI, inUse, func(a map[string]string) {
		a[driver.AnnotationOwner], a[driver.AnnotationClaimedBy] = `{"sandbox":"x"}`, "bob"
	})
	refused(t, "bob naming his sandbox on alice's VM", bobAPI, inUse, func(a map[string]string) {
		a[driver.AnnotationOwner] = `{"sandbox":"x"}`
	})
	// Nor deletes one: a VM goes by its holder's hand (or the operator's controllers').
	deleteRefused := func(what string, who client.Client, vm *kv.VirtualMachine) {
		t.Helper()
		if err := who.Delete(context.Background(), vm, client.DryRunAll); !apierrors.IsInvalid(err) &&
			!apierrors.IsForbidden(err) {
			t.Errorf("%s: %v; want it refused by the admission policy", what, err)
		}
	}
	deleteRefused("bob deleting alice's VM", bobAPI, inUse)
	deleteRefused("alice deleting the spare bob claimed", aliceAPI, &claimed)
	if err := bobAPI.Delete(context.Background(), &claimed, client.DryRunAll); err != nil {
		t.Errorf("bob deleting the spare he claimed (a dry run): %v", err)
	}
	if err := aliceAPI.Delete(context.Background(), inUse); err != nil {
		t.Fatalf("alice deleting her own VM: %v", err)
	}
	// Bob at his ceiling may not claim alice's next spare: refused, coded, and it stays hers.
	next := fill()
	if next.Annotations[driver.AnnotationClaimedBy] != "" || next.Name == spare.Name {
		t.Fatalf("alice's refilled spare: %s %v", next.Name, next.Annotations)
	}
	refused(t, "alice naming bob as the claimer of her spare", aliceAPI, next, func(a map[string]string) {
		a[driver.AnnotationClaimedBy] = "bob"
	})
	_, err = now(newWorkspace(t, s, bob)).apply()
	if err == nil {
		t.Fatalf("bob's second sandbox was made past his ceiling of one: %v", heldBy(t, s))
	}
	if c := coded.Of(err, coded.Unknown); c.Code != coded.InstanceLimit || c.Details["owner"] != "bob" {
		t.Fatalf("bob's second sandbox, at his ceiling, with alice's spare ready: %v", err)
	}
	if got := heldBy(t, s); got["bob"] != 1 || got["alice"] != 1 {
		t.Errorf("VMs by owner after the refusal: %v; want one each, alice's spare unclaimed", got)
	}

	// Carol's laptop, capped at one instance, claims alice's spare, then may not claim the next.
	carol := kubetest.Kubeconfig(t, cluster.User(t, "carol", s.ns, role))
	capped := oneSandbox + "\n[lease]\nmax_instances = 1\n"
	laptop := ""
	for i, alices := range []int{0, 1} { // carol claims alice's spare, then is refused the refilled one
		w := now(newWorkspace(t, s, carol))
		if laptop == "" {
			laptop = w.eng.HostDir
		}
		w.eng.HostDir = laptop
		if err := os.WriteFile(filepath.Join(w.root, spec.FileName), []byte(capped), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := w.apply()
		if i == 0 && err != nil {
			t.Fatalf("carol's first sandbox: %v", err)
		}
		if i == 1 {
			c := coded.Of(err, coded.Unknown)
			if err == nil || c.Code != coded.InstanceLimit || c.Details["owner"] != nil {
				t.Fatalf("carol's second sandbox on her laptop capped at one: %v; want her laptop's cap", err)
			}
		}
		if got := heldBy(t, s); got["carol"] != 1 || got["alice"] != alices {
			t.Errorf("VMs by owner after carol's sandbox %d: %v", i+1, got)
		}
		if i == 0 {
			fill()
		}
	}
}

// Every teammate sees who holds what until when, from the cluster: bob's `sbf status
// --all-owners` lists alice's VM as hers, with its sandbox and lease end, before he holds
// any; once he applies, his own too, marked as his workspace's.
func TestEveryTeammateSeesWhoHoldsWhat(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	sh := shippedRBAC(t, s)
	role := sh.rules["Role/sbf-kubevirt"]
	alice := kubetest.Kubeconfig(t, cluster.User(t, "alice", s.ns, role))
	bob := kubetest.Kubeconfig(t, cluster.User(t, "bob", s.ns, role))
	w := newWorkspace(t, s, alice)
	w.clock.Advance(time.Since(t0)) // the lease end bob reads is the real clock's
	if _, err := w.apply(); err != nil {
		t.Fatalf("alice's sandbox: %v", err)
	}
	sbf, ws, home := sbfBinary(t), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, spec.FileName), []byte(oneSandbox), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(sbf, append([]string{"-C", ws}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "KUBECONFIG=" + bob,
			"SBF_KUBEVIRT_NAMESPACE=" + s.ns, "SBF_KUBEVIRT_POLL=50ms"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sbf %v as bob: %v\n%s", args, err, out)
		}
		return string(out)
	}
	holdings := func() []reconcile.Holding {
		t.Helper()
		var st struct{ Holdings []reconcile.Holding }
		out := run("status", "--all-owners", "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("sbf status --all-owners --json: %v\n%s", err, out)
		}
		return st.Holdings
	}
	h := holdings()
	if len(h) != 1 || h[0].Holder != "alice" || h[0].Sandbox != "api" || h[0].Mine || h[0].LeaseEnd == nil ||
		h[0].LeaseEnd.Before(time.Now()) {
		t.Fatalf("bob's sbf status --all-owners, alice holding one VM: %+v", h)
	}
	run("apply", "--auto-approve")
	h = holdings()
	if len(h) != 2 || h[0].Holder != "alice" || h[1].Holder != "bob" || !h[1].Mine || h[1].Sandbox != "api" {
		t.Fatalf("bob's sbf status --all-owners after his apply: %+v", h)
	}
	if out := run("status", "--all-owners"); !strings.Contains(out, "HOLDER") ||
		!strings.Contains(out, "api (this workspace)") || !strings.Contains(out, "alice") {
		t.Errorf("sbf status --all-owners:\n%s", out)
	}
}

// refused says that who may not make change to vm's annotations (a dry run): the shipped
// admission policy refuses it. A write that met another (the stand-in's status) is tried again.
func refused(t *testing.T, what string, who client.Client, vm *kv.VirtualMachine, change func(map[string]string)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var now kv.VirtualMachine
		if err := who.Get(context.Background(), client.ObjectKeyFromObject(vm), &now); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		change(now.Annotations)
		return who.Update(context.Background(), &now, client.DryRunAll)
	})
	if !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v; want it refused by the admission policy", what, err)
	}
}
