package integration

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/expiry"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
	"github.com/sandboxforge/sbf/spec"
)

// shippedPolicy makes deploy/kubevirt's policy for the VMs' namespace: its ConfigMap, with
// the per-owner ceilings set as ceilings says, and its admission policy and binding
// (cluster-wide objects, gone with the test), and waits until the API server enforces the
// policy.
func shippedPolicy(t *testing.T, sh shipped, ceilings map[string]string) {
	t.Helper()
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(cluster.Config)
	made := 0
	for _, u := range manifests(t, sh.system.ns, sh.vms.ns) {
		switch u.GetKind() {
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err != nil {
				t.Fatal(err)
			}
			if cm.Name != driver.PolicyConfigMap || cm.Namespace != sh.vms.ns || cm.Data[driver.PolicyMaxPerOwner] == "" {
				t.Fatalf("deploy/kubevirt's policy: %+v; want a ceiling in the VMs' namespace", cm)
			}
			maps.Copy(cm.Data, ceilings)
			if err := sh.vms.admin.Create(ctx, &cm); err != nil {
				t.Fatal(err)
			}
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			resource := map[string]string{"ValidatingAdmissionPolicy": "validatingadmissionpolicies",
				"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings"}[u.GetKind()]
			gvr := admissionregistrationv1.SchemeGroupVersion.WithResource(resource)
			u.SetName(u.GetName() + "-" + sh.vms.ns)
			if u.GetKind() == "ValidatingAdmissionPolicyBinding" {
				unstructured.SetNestedField(u.Object, u.GetName(), "spec", "policyName")
			}
			if _, err := dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
			}
			t.Cleanup(func() { dyn.Resource(gvr).Delete(ctx, u.GetName(), metav1.DeleteOptions{}) })
		default:
			continue
		}
		made++
	}
	if made != 3 {
		t.Fatalf("deploy/kubevirt's policy: %d objects; want the ConfigMap, the admission policy and its binding", made)
	}
}

// forged is a VM, halted, that names owner as its maker.
func forged(ns, name, owner string) *kv.VirtualMachine { return sized(ns, name, owner, 0, 0) }

// sized is forged with cpus and memoryGiB (0: none said).
func sized(ns, name, owner string, cpus uint32, memoryGiB int64) *kv.VirtualMachine {
	halted := kv.RunStrategyHalted
	vm := &kv.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels:      map[string]string{driver.LabelManagedBy: driver.ManagedBy},
		Annotations: map[string]string{driver.AnnotationLeaseEnd: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}},
		Spec: kv.VirtualMachineSpec{RunStrategy: &halted, Template: &kv.VirtualMachineInstanceTemplateSpec{}}}
	if owner != "" {
		vm.Annotations[driver.AnnotationCreatedBy] = owner
	}
	if cpus > 0 {
		mem := *resource.NewQuantity(memoryGiB<<30, resource.BinarySI)
		vm.Spec.Template.Spec.Domain.CPU = &kv.CPU{Cores: cpus, Sockets: 1, Threads: 1}
		vm.Spec.Template.Spec.Domain.Memory = &kv.Memory{Guest: &mem}
	}
	return vm
}

// heldBy counts the VMs of s by the owner each names.
func heldBy(t *testing.T, s space) map[string]int {
	out := map[string]int{}
	for _, vm := range vmsIn(t, s) {
		out[driver.HeldBy(&vm)]++
	}
	return out
}

// Two people, each bound to the shipped Role, share the VMs' namespace under the shipped
// policy with a ceiling of one VM per owner: alice's second sandbox is refused, coded, naming
// what she holds, and nothing is made for it; bob's first is made, and bob lists both. The
// owner a VM names is its maker (the shipped admission policy): alice may make no VM in
// bob's name or in none, nor hand hers to him. One more she makes by hand, past sbf, is
// deleted by the controller, the newest of hers, with an Event; her first and bob's stay.
func TestAnOwnersCeilingHoldsAcrossTwoIdentities(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	sh := shippedRBAC(t, s)
	shippedPolicy(t, sh, map[string]string{driver.PolicyMaxPerOwner: "1"})
	role := sh.rules["Role/sbf-kubevirt"]
	aliceCfg := cluster.User(t, "alice", s.ns, role)
	alice := kubetest.Kubeconfig(t, aliceCfg)
	bob := kubetest.Kubeconfig(t, cluster.User(t, "bob", s.ns, role))
	// The owner a VM names is its maker: alice may not make one in bob's name, nor one naming
	// nobody (the admission policy; it takes effect shortly after it is made); sbf, naming its
	// user, passes it.
	aliceAPI, err := driver.NewClient(aliceCfg)
	if err != nil {
		t.Fatal(err)
	}
	dry := client.DryRunAll
	waitFor(t, "the admission policy to refuse a VM in bob's name", func() bool {
		return apierrors.IsInvalid(aliceAPI.Create(context.Background(), forged(s.ns, "in-bobs-name", "bob"), dry))
	})
	if err := aliceAPI.Create(context.Background(), forged(s.ns, "nobodys", ""), dry); !apierrors.IsInvalid(err) {
		t.Errorf("alice making a VM naming no maker: %v; want it refused", err)
	}
	now := func(w *workspace) *workspace { w.clock.Advance(time.Since(t0)); return w } // the controller's clock

	if _, err := now(newWorkspace(t, s, alice)).apply(); err != nil {
		t.Fatalf("alice's first sandbox: %v", err)
	}
	_, err = now(newWorkspace(t, s, alice)).apply()
	if err == nil {
		t.Fatalf("alice's second sandbox was made past her ceiling of one: %v", heldBy(t, s))
	}
	c := coded.Of(err, coded.Unknown)
	if c.Code != coded.InstanceLimit || c.Details["owner"] != "alice" || c.Details["max_instances"] != float64(1) {
		t.Fatalf("alice's second sandbox, past her ceiling: %#v", c)
	}
	if _, err := now(newWorkspace(t, s, bob)).apply(); err != nil {
		t.Fatalf("bob's first sandbox: %v", err)
	}
	if got := heldBy(t, s); got["alice"] != 1 || got["bob"] != 1 || len(got) != 2 {
		t.Fatalf("VMs by owner: %v; want one each", got)
	}

	// Bob sees who holds what, from the VM objects: the same record as alice's sbf.
	list := exec.Command(plugin, "holders", "--namespace", s.ns, "--json")
	list.Env = append(os.Environ(), "KUBECONFIG="+bob)
	held, err := list.Output()
	if err != nil {
		t.Fatalf("sbf-kubevirt holders as bob: %v", err)
	}
	var h driver.Holdings
	if err := json.Unmarshal(held, &h); err != nil || h.MaxVMs != 1 || h.ByOwner["alice"] != 1 ||
		h.ByOwner["bob"] != 1 || len(h.VMs) != 2 || h.VMs[0].Owner != "alice" || h.VMs[0].LeaseEnd == "" {
		t.Errorf("sbf-kubevirt holders as bob: %v\n%s", err, held)
	}

	// ... nor disown hers.
	mine := vmsIn(t, s)
	for i := range mine {
		if driver.HeldBy(&mine[i]) == "alice" {
			mine[i].Annotations[driver.AnnotationCreatedBy] = "bob"
			if err := aliceAPI.Update(context.Background(), &mine[i], dry); !apierrors.IsInvalid(err) {
				t.Errorf("alice handing her VM to bob: %v; want it refused", err)
			}
		}
	}

	// Alice makes one more by hand, past sbf and her ceiling: the controller deletes it, the
	// newest of hers.
	extra := forged(s.ns, "alices-extra", "alice")
	time.Sleep(time.Second) // creation times have whole seconds: the extra is the newest
	if err := aliceAPI.Create(context.Background(), extra); err != nil {
		t.Fatalf("alice making a VM in her own name by hand: %v", err)
	}
	ctrl := kubetest.Kubeconfig(t, sh.as(t, "owners-controller", "sbf-controller"))
	out := runPlugin(t, ctrl, "controller", "--namespaces", s.ns)
	waitFor(t, "the controller to delete alice's extra VM", func() bool { return heldBy(t, s)["alice"] == 1 })
	if got := heldBy(t, s); got["bob"] != 1 {
		t.Errorf("VMs by owner after the controller's pass: %v", got)
	}
	for _, vm := range vmsIn(t, s) {
		if vm.Name == extra.Name {
			t.Errorf("the controller deleted alice's first VM, not the newest:\n%s", out)
		}
	}
	waitFor(t, "the Event", func() bool {
		var events corev1.EventList
		if err := s.admin.List(context.Background(), &events, client.InNamespace(s.ns)); err != nil {
			t.Fatal(err)
		}
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == extra.Name && ev.Reason == expiry.ReasonOverOwnerCeiling {
				return true
			}
		}
		return false
	})
}

// The per-owner ceilings on vCPUs and memory hold as the one on VMs does: with at most one
// vCPU and 1.5 GiB per owner, alice's second sandbox (one vCPU, 1 GiB, as her first) is
// refused, coded, naming both ceilings it passes, what she holds and what she asked for; a
// VM she makes by hand past them is deleted by the controller, the newest, with an Event;
// bob, holding one VM, is not touched, and sbf-kubevirt holders shows each one's use.
func TestAnOwnersCPUAndMemoryCeilingsHold(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	sh := shippedRBAC(t, s)
	shippedPolicy(t, sh, map[string]string{driver.PolicyMaxPerOwner: "0", driver.PolicyMaxCPUsPerOwner: "1",
		driver.PolicyMaxMemoryPerOwner: "1536Mi"})
	role := sh.rules["Role/sbf-kubevirt"]
	aliceCfg := cluster.User(t, "alice", s.ns, role)
	alice := kubetest.Kubeconfig(t, aliceCfg)
	now := func(w *workspace) *workspace { w.clock.Advance(time.Since(t0)); return w }
	if _, err := now(newWorkspace(t, s, alice)).apply(); err != nil {
		t.Fatalf("alice's first sandbox: %v", err)
	}
	_, err := now(newWorkspace(t, s, alice)).apply()
	if err == nil {
		t.Fatalf("alice's second sandbox was made past her vCPU and memory ceilings: %v", heldBy(t, s))
	}
	c := coded.Of(err, coded.Unknown)
	over, _ := c.Details["over"].([]any)
	held, _ := c.Details["held"].(map[string]any)
	if c.Code != coded.InstanceLimit || len(over) != 2 || over[0] != "cpus" || over[1] != "memory" ||
		held["cpus"] != float64(1) || held["memory_bytes"] != float64(1<<30) {
		t.Fatalf("alice's second sandbox, past her vCPU and memory ceilings: %v %#v", err, c)
	}
	if got := heldBy(t, s); got["alice"] != 1 {
		t.Fatalf("VMs by owner after the refusal: %v", got)
	}
	bob := kubetest.Kubeconfig(t, cluster.User(t, "bob", s.ns, role))
	if _, err := now(newWorkspace(t, s, bob)).apply(); err != nil {
		t.Fatalf("bob's first sandbox: %v", err)
	}
	aliceAPI, err := driver.NewClient(aliceCfg)
	if err != nil {
		t.Fatal(err)
	}
	extra := sized(s.ns, "alices-big-extra", "alice", 1, 1)
	time.Sleep(time.Second) // creation times have whole seconds: the extra is the newest
	waitFor(t, "alice making a VM by hand (the admission policy is in force)", func() bool {
		return aliceAPI.Create(context.Background(), extra) == nil
	})
	list := exec.Command(plugin, "holders", "--namespace", s.ns, "--json")
	list.Env = append(os.Environ(), "KUBECONFIG="+alice)
	out, err := list.Output()
	var h driver.Holdings
	if err != nil || json.Unmarshal(out, &h) != nil || h.MaxCPUs != 1 || h.MaxMemoryBytes != 1536<<20 ||
		h.UseByOwner["alice"].CPUs != 2 || h.UseByOwner["alice"].MemoryBytes != 2<<30 {
		t.Errorf("sbf-kubevirt holders: %v\n%s", err, out)
	}
	ctrl := kubetest.Kubeconfig(t, sh.as(t, "cpu-controller", "sbf-controller"))
	log := runPlugin(t, ctrl, "controller", "--namespaces", s.ns)
	waitFor(t, "the controller to delete alice's extra VM", func() bool { return heldBy(t, s)["alice"] == 1 })
	for _, vm := range vmsIn(t, s) {
		if vm.Name == extra.Name {
			t.Errorf("the controller deleted alice's first VM, not the newest:\n%s", log)
		}
	}
	if got := heldBy(t, s); got["bob"] != 1 {
		t.Errorf("VMs by owner after the controller's pass: %v", got)
	}
}

// A host's own instance cap counts the instances this host's user made, not a teammate's in
// the shared namespace: with bob's sandbox running there, alice's laptop capped at one
// instance makes hers.
func TestATeammatesVMsDoNotCountAgainstAHostsCap(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	sh := shippedRBAC(t, s)
	role := sh.rules["Role/sbf-kubevirt"]
	alice := kubetest.Kubeconfig(t, cluster.User(t, "alice", s.ns, role))
	bob := kubetest.Kubeconfig(t, cluster.User(t, "bob", s.ns, role))
	now := func(w *workspace) *workspace { w.clock.Advance(time.Since(t0)); return w }
	if _, err := now(newWorkspace(t, s, bob)).apply(); err != nil {
		t.Fatalf("bob's sandbox: %v", err)
	}
	w := now(newWorkspace(t, s, alice))
	capped := oneSandbox + "\n[lease]\nmax_instances = 1\n"
	if err := os.WriteFile(filepath.Join(w.root, spec.FileName), []byte(capped), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.apply(); err != nil {
		t.Fatalf("alice's sandbox, her laptop capped at one instance, beside bob's: %v", err)
	}
	if got := heldBy(t, s); got["alice"] != 1 || got["bob"] != 1 {
		t.Errorf("VMs by owner: %v; want one each", got)
	}
}

// An owner the policy excepts holds to their own ceilings, in sbf and in the controller: with
// one VM per owner but two for alice, alice makes two sandboxes and her third is refused,
// coded, with her ceiling; bob's second is refused at one; and the controller's pass leaves
// alice's two.
func TestAnOwnersExceptionHoldsInSbfAndTheController(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	sh := shippedRBAC(t, s)
	shippedPolicy(t, sh, map[string]string{driver.PolicyMaxPerOwner: "1",
		driver.PolicyOwnerExceptions: "alice " + driver.PolicyMaxPerOwner + "=2\n"})
	role := sh.rules["Role/sbf-kubevirt"]
	alice := kubetest.Kubeconfig(t, cluster.User(t, "alice", s.ns, role))
	bob := kubetest.Kubeconfig(t, cluster.User(t, "bob", s.ns, role))
	now := func(w *workspace) *workspace { w.clock.Advance(time.Since(t0)); return w }
	for i := range 2 {
		if _, err := now(newWorkspace(t, s, alice)).apply(); err != nil {
			t.Fatalf("alice's sandbox %d of her own ceiling of 2: %v", i+1, err)
		}
	}
	_, err := now(newWorkspace(t, s, alice)).apply()
	if c := coded.Of(err, coded.Unknown); err == nil || c.Code != coded.InstanceLimit ||
		c.Details["max_instances"] != float64(2) {
		t.Fatalf("alice's third sandbox, past her own ceiling of 2: %v", err)
	}
	if _, err := now(newWorkspace(t, s, bob)).apply(); err != nil {
		t.Fatalf("bob's first sandbox: %v", err)
	}
	_, err = now(newWorkspace(t, s, bob)).apply()
	if c := coded.Of(err, coded.Unknown); err == nil || c.Details["max_instances"] != float64(1) {
		t.Fatalf("bob's second sandbox, past the namespace's ceiling of 1: %v", err)
	}
	ctrl := kubetest.Kubeconfig(t, sh.as(t, "exception-controller", "sbf-controller"))
	log := runPlugin(t, ctrl, "controller", "--namespaces", s.ns)
	time.Sleep(3 * time.Second) // a few passes
	if got := heldBy(t, s); got["alice"] != 2 || got["bob"] != 1 {
		t.Errorf("VMs by owner after the controller's passes: %v; want alice's two and bob's one\n%s", got, log)
	}
}
