package spec

// KubeVirt is [vm.kubevirt] (and [sandboxes.NAME.kubevirt]): what the kubevirt driver
// makes a sandbox's VirtualMachine from. Unset keys fall back to the driver's own
// settings (SBF_KUBEVIRT_NAMESPACE, SBF_KUBEVIRT_IMAGE, …).
type KubeVirt struct {
	Namespace    string `toml:"namespace" json:"namespace" doc:"Namespace the workspace's VMs live in; the same for every sandbox. Default sbf-<workspace tag>."`
	Image        string `toml:"image" json:"image" doc:"containerDisk the VM boots (REGISTRY/IMAGE:TAG); image.location = \"docker://REF\" says the same per sandbox."`
	StorageClass string `toml:"storage_class" json:"storage_class" doc:"Give the VM a persistent root disk of disk_gib (a DataVolume imported from the image) in this StorageClass instead of an ephemeral containerDisk."`
	Instancetype string `toml:"instancetype" json:"instancetype" doc:"VirtualMachineClusterInstancetype that sizes the VM instead of cpus and memory_gib."`
	Preference   string `toml:"preference" json:"preference" doc:"VirtualMachineClusterPreference applied to the VM."`
}

// Settings are the keys that are set, by their names in the file: what the driver is given
// (drivers.Spec.Backend).
func (k KubeVirt) Settings() map[string]string {
	out := map[string]string{}
	for key, v := range map[string]string{"namespace": k.Namespace, "image": k.Image, "storage_class": k.StorageClass,
		"instancetype": k.Instancetype, "preference": k.Preference} {
		if v != "" {
			out[key] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// BackendSettings are the settings of a sandbox's own backend table for
// driver ([vm.kubevirt] for kubevirt; nil for a backend without one), as
// drivers.Spec.Backend carries them: the planner asks here rather than
// knowing which driver has a table.
func (s Sandbox) BackendSettings(driver string) map[string]string {
	if driver == "kubevirt" {
		return s.KubeVirt.Settings()
	}
	return nil
}
