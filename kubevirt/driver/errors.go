package driver

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/sandboxforge/sbf/drivers"
)

// Name is the driver's name in specs.
const Name = "kubevirt"

// apiError says what failed doing what, in the terms the engine tells apart: a missing
// object is drivers.ErrNotFound; a refusal by RBAC or of the credentials, or an API
// server that does not answer, is an *drivers.UnavailableError with next steps.
func (d *Driver) apiError(doing string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: %w (%v)", doing, drivers.ErrNotFound, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: %w", doing, d.forbidden(err.Error()))
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: %w", doing, &drivers.UnavailableError{Driver: Name, Reason: err.Error(),
			ProbableCause: "backend_credentials_rejected", NextSteps: []string{
				"renew the credentials of your kubeconfig (" + d.where + ")", "sbf doctor checks them"}})
	case meta.IsNoMatchError(err):
		return fmt.Errorf("%s: %w", doing, notInstalled(d.where, err))
	case isUnreachable(err):
		return fmt.Errorf("%s: %w", doing, unreachable(err))
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// forbidden is a refusal by RBAC, with what grants the verbs.
func (d *Driver) forbidden(reason string) *drivers.UnavailableError {
	return &drivers.UnavailableError{Driver: Name, Reason: reason, ProbableCause: "rbac_forbidden", NextSteps: []string{
		fmt.Sprintf("bind the Role sbf-kubevirt of deploy/kubevirt/rbac.yaml (made in the VMs' namespace, sbf-vms) in "+
			"namespace %s to the user or service account sbf uses: kubectl -n %s create rolebinding sbf-kubevirt-USER "+
			"--role sbf-kubevirt --user USER", d.set.Namespace, d.set.Namespace),
		"sbf doctor lists every verb the cluster refuses",
	}}
}

// notInstalled is a cluster that serves no KubeVirt resources (its CRDs are missing), as the
// API's discovery answers for any call on a VirtualMachine.
func notInstalled(where string, err error) *drivers.UnavailableError {
	return &drivers.UnavailableError{Driver: Name, ProbableCause: "kubevirt_not_installed",
		Reason: "the cluster (" + where + ") serves no kubevirt.io/v1 VirtualMachines: KubeVirt is not installed " +
			"there (" + err.Error() + ")",
		NextSteps: []string{"install KubeVirt on the cluster (its operator and a KubeVirt resource), " +
			"or point KUBECONFIG (or its current context) at a cluster that has it",
			"or choose another driver: [vm] driver in .sandboxforge.toml",
			"sbf doctor checks the API, KubeVirt's CRDs and the RBAC verbs sbf needs"}}
}

func unreachable(err error) *drivers.UnavailableError {
	return &drivers.UnavailableError{Driver: Name, Reason: "the Kubernetes API server does not answer: " + err.Error(),
		ProbableCause: "backend_unreachable", NextSteps: []string{
			"check the cluster is up and KUBECONFIG (or ~/.kube/config) names it: kubectl version",
			"sbf doctor checks the API, KubeVirt's CRDs and the RBAC verbs sbf needs"}}
}

// isUnreachable is a failure to talk to the API server at all (no answer, refused,
// no such host), not an answer.
func isUnreachable(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}
