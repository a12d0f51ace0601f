package driver

import (
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// Settings are the driver's, from the plugin's environment (sbf passes its own values of
// these; the [vm.kubevirt] keys of a workspace override them per sandbox).
type Settings struct {
	// Namespace holds the workspace's VMs: SBF_KUBEVIRT_NAMESPACE, else the kubeconfig
	// context's namespace (New), else one per workspace, sbf-<workspace tag>.
	Namespace string
	// Image is the containerDisk a VM boots when its spec names no image:
	// SBF_KUBEVIRT_IMAGE.
	Image string
	// StorageClass, when set, gives each VM a DataVolume of disk_gib imported from its
	// image instead of an ephemeral containerDisk: SBF_KUBEVIRT_STORAGE_CLASS.
	StorageClass string
	Instancetype string // SBF_KUBEVIRT_INSTANCETYPE: a VirtualMachineClusterInstancetype
	Preference   string // SBF_KUBEVIRT_PREFERENCE: a VirtualMachineClusterPreference
	SSHUser      string // the guest user cloud-init makes: SBF_KUBEVIRT_SSH_USER, default sbf
	// StartTimeout bounds how long Start waits for the VMI to be ready
	// (SBF_KUBEVIRT_START_TIMEOUT, default 10m).
	StartTimeout time.Duration
	// Poll is how often a wait looks again: SBF_KUBEVIRT_POLL, default 1s (tests shorten it).
	Poll time.Duration
}

// DefaultImage is a public containerDisk of Debian 12 with cloud-init.
const DefaultImage = "quay.io/containerdisks/debian:12"

// SettingsFrom reads the settings; workspaceID decides the default namespace.
func SettingsFrom(getenv func(string) string, workspaceID string) (Settings, error) {
	s := Settings{Namespace: getenv("SBF_KUBEVIRT_NAMESPACE"), Image: getenv("SBF_KUBEVIRT_IMAGE"),
		StorageClass: getenv("SBF_KUBEVIRT_STORAGE_CLASS"), Instancetype: getenv("SBF_KUBEVIRT_INSTANCETYPE"),
		Preference: getenv("SBF_KUBEVIRT_PREFERENCE"), SSHUser: getenv("SBF_KUBEVIRT_SSH_USER"),
		StartTimeout: 10 * time.Minute, Poll: time.Second}
	if s.Namespace == "" {
		if workspaceID == "" {
			return s, fmt.Errorf("no namespace: set SBF_KUBEVIRT_NAMESPACE or run sbf in a workspace")
		}
		s.Namespace = "sbf-" + drivers.WorkspaceTag(workspaceID)
	}
	if s.Image == "" {
		s.Image = DefaultImage
	}
	if s.SSHUser == "" {
		s.SSHUser = "sbf"
	}
	if v := getenv("SBF_KUBEVIRT_POLL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("SBF_KUBEVIRT_POLL=%q: want a positive duration such as 1s", v)
		}
		s.Poll = d
	}
	if v := getenv("SBF_KUBEVIRT_START_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("SBF_KUBEVIRT_START_TIMEOUT=%q: want a positive duration such as 10m", v)
		}
		s.StartTimeout = d
	}
	return s, nil
}
