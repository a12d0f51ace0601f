package driver

import (
	"context"
	"fmt"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	kv "kubevirt.io/api/core/v1"

	"github.com/sandboxforge/sbf/drivers"
)

// Needed is every verb the driver uses, by resource: what deploy/kubevirt/rbac.yaml
// grants and sbf doctor checks.
var Needed = []Access{
	{Group: "kubevirt.io", Resource: "virtualmachines", Verbs: []string{"get", "list", "create", "update", "delete"}},
	{Group: "kubevirt.io", Resource: "virtualmachineinstances", Verbs: []string{"get", "list"}},
	{Resource: "pods", Verbs: []string{"list"}},
	{Resource: "pods/portforward", Verbs: []string{"create"}},
	{Resource: "persistentvolumeclaims", Verbs: []string{"get", "update"}},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verbs: []string{"get", "create", "update", "delete"}},
	// The cluster's per-owner ceiling (owners.go), read before each create.
	{Resource: "configmaps", Name: PolicyConfigMap, Verbs: []string{"get"}},
	// What sbf did to a VM and by whom: an Event on it (events.go); why one went (departed.go).
	{Resource: "events", Verbs: []string{"create", "list"}},
}

// Access is verbs on a resource of an API group ("" is the core group), on the object Name
// alone when it is set (RBAC's resourceNames).
type Access struct {
	Group, Resource, Name string
	Verbs                 []string
}

// Diagnose checks, without stopping at the first problem: the API answers, KubeVirt is
// served and running, the namespace is usable, and RBAC allows every verb sbf uses there.
func (d *Driver) Diagnose(ctx context.Context, specs []drivers.Spec) drivers.Diagnosis {
	diag := drivers.Diagnosis{Driver: Name}
	d.check(ctx, &diag)
	if c, ok := checkEnforcement(specs); ok {
		diag.Add(c)
	}
	diag.Finish()
	diag.Summary = "usable: VirtualMachines in namespace " + d.set.Namespace + " (" + d.where + ")"
	if !diag.Usable {
		diag.Summary = "cannot run VMs in " + d.set.Namespace + " yet: see the failed checks"
	}
	return diag
}

func (d *Driver) check(ctx context.Context, diag *drivers.Diagnosis) {
	disc, err := discovery.NewDiscoveryClientForConfig(d.cfg)
	if err == nil {
		_, err = disc.ServerVersion()
	}
	if err != nil {
		diag.Add(drivers.CheckFromError("api", d.apiError("asking the API server its version", err)))
		return
	}
	diag.Add(drivers.Check{Name: "api", Status: drivers.CheckOK, Detail: "the API server answers (" + d.where + ")"})
	diag.Add(d.checkKubeVirt(ctx, disc))
	diag.Add(d.checkNamespace(ctx))
	diag.Add(d.checkRBAC(ctx))
}

func (d *Driver) checkKubeVirt(ctx context.Context, disc discovery.DiscoveryInterface) drivers.Check {
	res, err := disc.ServerResourcesForGroupVersion("kubevirt.io/v1")
	found := map[string]bool{}
	if err == nil {
		for _, r := range res.APIResources {
			found[r.Name] = true
		}
	}
	if !found["virtualmachines"] || !found["virtualmachineinstances"] {
		return drivers.Check{Name: "kubevirt", Status: drivers.CheckFail,
			Detail: "the cluster serves no kubevirt.io/v1 VirtualMachines: KubeVirt is not installed",
			NextSteps: []string{"install KubeVirt (its operator and a KubeVirt resource) on the cluster",
				"or point KUBECONFIG at a cluster that has it"}}
	}
	// The CRDs outlive KubeVirt (they stay when its operator is gone or its pods are down),
	// and with no KubeVirt running nothing makes a VM's instance: a start would wait out
	// its whole timeout. virt-api serves subresources.kubevirt.io/v1 while it runs, and
	// asking discovery for it needs no RBAC.
	if _, err := disc.ServerResourcesForGroupVersion("subresources.kubevirt.io/v1"); err != nil {
		return drivers.Check{Name: "kubevirt", Status: drivers.CheckFail,
			Detail: "KubeVirt's CRDs are served but KubeVirt is not running: virt-api does not answer " +
				"(subresources.kubevirt.io/v1: " + err.Error() + "); no VM would start",
			NextSteps: []string{"kubectl get kubevirt -A: the KubeVirt resource's Available condition says why",
				"kubectl -n kubevirt get pods: virt-api, virt-controller and virt-handler should be running",
				"or deploy KubeVirt (its operator and a KubeVirt resource), or point KUBECONFIG at a cluster that runs it"}}
	}
	if why := d.kubevirtUnavailable(ctx); why != "" {
		return drivers.Check{Name: "kubevirt", Status: drivers.CheckFail, Detail: why,
			NextSteps: []string{"kubectl get kubevirt -A -o yaml: its conditions say what is missing",
				"kubectl -n kubevirt get pods: virt-api, virt-controller and virt-handler should be running"}}
	}
	return drivers.Check{Name: "kubevirt", Status: drivers.CheckOK,
		Detail: "kubevirt.io/v1 VirtualMachines are served and virt-api answers"}
}

// kubevirtUnavailable reads the KubeVirt resource, when these credentials may: its
// Available condition, when false, says why (a deployment half done or degraded). ""
// when it is available, or cannot be read (most users may not list it cluster-wide).
func (d *Driver) kubevirtUnavailable(ctx context.Context) string {
	var list kv.KubeVirtList
	if err := d.c.List(ctx, &list); err != nil {
		return ""
	}
	for _, k := range list.Items {
		for _, c := range k.Status.Conditions {
			if c.Type == kv.KubeVirtConditionAvailable && c.Status != corev1.ConditionTrue {
				return fmt.Sprintf("KubeVirt %s/%s is not Available: %s %s", k.Namespace, k.Name, c.Reason, c.Message)
			}
		}
	}
	return ""
}

func (d *Driver) checkNamespace(ctx context.Context) drivers.Check {
	var ns corev1.Namespace
	err := d.c.Get(ctx, types.NamespacedName{Name: d.set.Namespace}, &ns)
	switch {
	case err == nil && ns.Status.Phase == corev1.NamespaceTerminating:
		return drivers.Check{Name: "namespace", Status: drivers.CheckFail, Detail: d.set.Namespace + " is being deleted",
			NextSteps: []string{"wait for it to go, or set SBF_KUBEVIRT_NAMESPACE to another"}}
	case err == nil:
		return drivers.Check{Name: "namespace", Status: drivers.CheckOK, Detail: d.set.Namespace + " exists"}
	case apierrors.IsNotFound(err) && d.allowed(ctx, Access{Resource: "namespaces", Verbs: []string{"create"}}, "") == "":
		return drivers.Check{Name: "namespace", Status: drivers.CheckOK,
			Detail: d.set.Namespace + " does not exist yet; sbf makes it with the first VM"}
	case apierrors.IsForbidden(err):
		return drivers.Check{Name: "namespace", Status: drivers.CheckWarn,
			Detail:    "namespaces may not be read, so whether " + d.set.Namespace + " exists is unknown; sbf uses it as it is",
			NextSteps: []string{"if it does not exist, ask a cluster admin: kubectl create namespace " + d.set.Namespace}}
	case apierrors.IsNotFound(err):
		return drivers.Check{Name: "namespace", Status: drivers.CheckFail,
			Detail: d.set.Namespace + " does not exist, and sbf may not create namespaces",
			NextSteps: []string{"kubectl create namespace " + d.set.Namespace,
				"or set SBF_KUBEVIRT_NAMESPACE to a namespace you may use"}}
	}
	return drivers.CheckFromError("namespace", d.apiError("reading namespace "+d.set.Namespace, err))
}

func (d *Driver) checkRBAC(ctx context.Context) drivers.Check {
	var refused []string
	for _, a := range Needed {
		if r := d.allowed(ctx, a, d.set.Namespace); r != "" {
			refused = append(refused, r)
		}
	}
	if len(refused) > 0 {
		u := d.forbidden("RBAC refuses " + strings.Join(refused, ", ") + " in namespace " + d.set.Namespace)
		return drivers.Check{Name: "rbac", Status: drivers.CheckFail, Detail: u.Reason, NextSteps: u.NextSteps}
	}
	return drivers.Check{Name: "rbac", Status: drivers.CheckOK,
		Detail: "every verb sbf uses is allowed in " + d.set.Namespace}
}

// allowed asks the API server (SelfSubjectAccessReview) whether a's verbs are allowed;
// it returns the refused ones as "verb resource", "" when all are allowed.
func (d *Driver) allowed(ctx context.Context, a Access, namespace string) string {
	var refused []string
	for _, verb := range a.Verbs {
		res, sub, _ := strings.Cut(a.Resource, "/")
		review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authzv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: a.Group,
				Resource: res, Subresource: sub, Name: a.Name}}}
		if err := d.c.Create(ctx, review); err != nil || !review.Status.Allowed {
			refused = append(refused, fmt.Sprintf("%s %s", verb, qualified(a)))
		}
	}
	return strings.Join(refused, ", ")
}

func qualified(a Access) string {
	q := a.Resource
	if a.Group != "" {
		q += "." + a.Group
	}
	if a.Name != "" {
		q += " " + a.Name
	}
	return q
}

// checkEnforcement says, when a sandbox has a network policy, what sbf cannot check: that
// the cluster's CNI enforces NetworkPolicies at all (some CNIs accept the objects and
// ignore them).
func checkEnforcement(specs []drivers.Spec) (drivers.Check, bool) {
	for _, s := range specs {
		if s.Egress != nil {
			return drivers.Check{Name: "network policy enforcement", Status: drivers.CheckWarn,
				Detail: "[network] policies become NetworkPolicies on the VMs' pods; whether they hold is up to " +
					"the cluster's CNI, which sbf cannot see",
				NextSteps: []string{"check that the cluster's CNI enforces NetworkPolicy egress rules " +
					"(Calico, Cilium, Antrea, OVN-Kubernetes do; flannel alone does not)"}}, true
		}
	}
	return drivers.Check{}, false
}
