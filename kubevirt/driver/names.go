package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels and annotations sbf puts on the objects it makes. Ownership is a label, not a
// name: List selects on ManagedBy, and an object without it is never touched, whatever it
// is called.
const (
	LabelManagedBy    = "app.kubernetes.io/managed-by"
	ManagedBy         = "sandboxforge"
	LabelWorkspace    = "sandboxforge.dev/workspace"
	LabelWorkspaceTag = "sandboxforge.dev/workspace-tag"
	LabelSandbox      = "sandboxforge.dev/sandbox"
	LabelPool         = "sandboxforge.dev/pool"
	// LabelVM is on the VM template only, so KubeVirt puts it on the VM's virt-launcher
	// pod: what the VM's NetworkPolicy selects (the object name; the instance's own name
	// need not be a label value).
	LabelVM = "sandboxforge.dev/vm"

	AnnotationInstance = "sandboxforge.dev/instance"
	AnnotationLeaseEnd = "sandboxforge.dev/lease-expires-at"
	// AnnotationCreatedBy is the Kubernetes user that made the VM, as the API server named
	// it to sbf (a SelfSubjectReview): for people looking at the cluster, not a permission.
	AnnotationCreatedBy = "sandboxforge.dev/created-by"
	AnnotationSpare     = "sandboxforge.dev/spare"
	AnnotationOwner     = "sandboxforge.dev/owner"
	// AnnotationClaimedBy is the Kubernetes user that claimed a teammate's ready spare for one
	// of their sandboxes: from then on the VM is theirs (their ceilings count it). Set once,
	// by the claimer, only on a ready spare (the shipped admission policy holds both).
	AnnotationClaimedBy = "sandboxforge.dev/claimed-by"
)

// ObjectName is the VirtualMachine's name for an sbf instance name. Instance names may
// hold capitals and underscores (sandbox names do), which Kubernetes names may not: such
// a name is lowered, its underscores made dashes, and a hash of the original appended so
// two names never meet. The instance's own name is kept in AnnotationInstance.
func ObjectName(instance string) string {
	if len(validation.IsDNS1123Label(instance)) == 0 {
		return instance
	}
	sum := sha256.Sum256([]byte(instance))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	base := strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, instance), "-")
	if max := validation.DNS1123LabelMaxLength - len(suffix); len(base) > max {
		base = strings.TrimRight(base[:max], "-")
	}
	return base + suffix
}

// labelValue is v when Kubernetes takes it as a label value, else "".
func labelValue(v string) string {
	if len(validation.IsValidLabelValue(v)) > 0 {
		return ""
	}
	return v
}
