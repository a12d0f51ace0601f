package driver

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kv "kubevirt.io/api/core/v1"

	"github.com/sandboxforge/sbf/drivers"
)

// failedCreatePod is the reason KubeVirt's VMI controller gives a VMI whose virt-launcher pod
// it could not create (its Synchronized condition, False; the VMI stays Pending and KubeVirt
// tries again, for ever).
const failedCreatePod = "FailedCreate"

// launcherRefused says why a VMI cannot start when the API server refused its launcher pod:
// Pod Security (a namespace labelled restricted or baseline: KubeVirt's launcher needs
// privileged), a ResourceQuota, a webhook. Such a VMI would stay "Pending" until the start
// timeout, and nothing sbf does changes that: the operator must. nil while nothing refused it.
func (d *Driver) launcherRefused(vmi *kv.VirtualMachineInstance) error {
	var msg string
	for _, c := range vmi.Status.Conditions {
		if c.Type == kv.VirtualMachineInstanceSynchronized && c.Status == corev1.ConditionFalse &&
			c.Reason == failedCreatePod && strings.Contains(c.Message, "forbidden") {
			msg = c.Message
		}
	}
	if msg == "" {
		return nil
	}
	ns := vmi.Namespace
	look := fmt.Sprintf("kubectl -n %s describe vmi %s shows KubeVirt's words; KubeVirt keeps trying, and the VM "+
		"starts once the refusal is lifted (sbf apply then finds it running)", ns, vmi.Name)
	if strings.Contains(msg, "PodSecurity") {
		return &drivers.UnavailableError{Driver: Name, ProbableCause: "vm_namespace_pod_security",
			Reason: "the VM cannot start: namespace " + ns + " enforces a Pod Security level that KubeVirt's " +
				"virt-launcher pod does not meet (it needs privileged): " + msg,
			NextSteps: []string{
				"run the VMs in a namespace of their own that allows privileged pods, apart from the controllers' " +
					"restricted one: deploy/kubevirt/namespaces.yaml makes sbf-vms; set SBF_KUBEVIRT_NAMESPACE to it",
				fmt.Sprintf("or, as a cluster admin, label this one: kubectl label namespace %s "+
					"pod-security.kubernetes.io/enforce=privileged --overwrite", ns),
				look}}
	}
	return &drivers.UnavailableError{Driver: Name, ProbableCause: "vm_pod_refused",
		Reason: "the VM cannot start: the API server refused its virt-launcher pod in namespace " + ns + ": " + msg,
		NextSteps: []string{
			fmt.Sprintf("kubectl -n %s get resourcequota,limitrange: a quota or limit the VM's pod exceeds", ns),
			"an admission webhook or policy of the cluster may refuse it: ask the cluster's operator", look}}
}
