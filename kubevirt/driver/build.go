package driver

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kv "kubevirt.io/api/core/v1"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/sandboxforge/sbf/drivers"
)

// Volume and network names in the VMs sbf makes.
const (
	rootDisk  = "rootdisk"
	cloudInit = "cloudinitdisk"
)

// guest is who the VM is for: the workspace sbf acts for and the key its user accepts.
type guest struct {
	WorkspaceID string
	User        string
	PublicKey   string
}

// image is where a VM's root disk comes from.
type image struct {
	ContainerDisk string // a registry reference: a containerDisk, or a DataVolume's registry source
	HTTP          string // an http(s) URL: a DataVolume's http source
}

// imageOf reads the spec's image: docker://REF is a containerDisk, an http(s) URL a disk
// to import; with neither, the configured containerDisk. A path on this host cannot
// reach a cluster.
func imageOf(s drivers.Spec, set Settings) (image, error) {
	loc := s.Image.Location
	switch {
	case s.Image.Kernel != "" || s.Image.Initrd != "":
		return image{}, &drivers.SpecError{Driver: Name, Key: "image.kernel",
			Reason: "boot a kernel directly; use a disk image"}
	case loc == "":
		return image{ContainerDisk: set.Image}, nil
	case strings.HasPrefix(loc, "docker://"):
		return image{ContainerDisk: strings.TrimPrefix(loc, "docker://")}, nil
	case strings.HasPrefix(loc, "https://"), strings.HasPrefix(loc, "http://"):
		return image{HTTP: loc}, nil
	}
	return image{}, &drivers.SpecError{Driver: Name, Key: "image.location", Reason: fmt.Sprintf(
		"boot %q: a cluster VM boots a containerDisk (docker://REGISTRY/IMAGE) or imports an http(s) URL", loc)}
}

// archOf is KubeVirt's spelling of the spec's architecture.
func archOf(arch string) (string, error) {
	switch drivers.CanonicalArch(arch) {
	case "":
		return "", nil
	case "x86_64":
		return "amd64", nil
	case "aarch64":
		return "arm64", nil
	}
	return "", &drivers.SpecError{Driver: Name, Key: "arch", Reason: "run " + arch + " guests"}
}

// gib is n GiB as a quantity, in the largest binary unit that holds it exactly.
func gib(n float64) resource.Quantity { return *resource.NewQuantity(gibBytes(n), resource.BinarySI) }

func gibBytes(n float64) int64 { return int64(math.Round(n * (1 << 30))) }

func inGiB(q resource.Quantity) float64 { return float64(q.Value()) / (1 << 30) }

// forSpec are the settings with the spec's own ([vm.kubevirt], drivers.Spec.Backend) laid
// over them.
func (set Settings) forSpec(s drivers.Spec) (Settings, error) {
	for key, v := range s.Backend {
		switch key {
		case "namespace":
			if v != set.Namespace {
				return set, &drivers.SpecError{Driver: Name, Key: "kubevirt.namespace", Reason: fmt.Sprintf(
					"put one sandbox in %s and the workspace in %s: a workspace's VMs share one namespace "+
						"(SBF_KUBEVIRT_NAMESPACE)", v, set.Namespace)}
			}
		case "image":
			set.Image = v
		case "storage_class":
			set.StorageClass = v
		case "instancetype":
			set.Instancetype = v
		case "preference":
			set.Preference = v
		default:
			return set, &drivers.SpecError{Driver: Name, Key: "kubevirt." + key, Reason: "take this setting"}
		}
	}
	return set, nil
}

// newVM is the VirtualMachine for s, halted.
func newVM(s drivers.Spec, set Settings, g guest) (*kv.VirtualMachine, error) {
	set, err := set.forSpec(s)
	if err != nil {
		return nil, err
	}
	img, err := imageOf(s, set)
	if err != nil {
		return nil, err
	}
	arch, err := archOf(s.Arch)
	if err != nil {
		return nil, err
	}
	name := ObjectName(s.Name)
	labels := ownershipLabels(s.Name, g.WorkspaceID)
	halted := kv.RunStrategyHalted
	annotations := map[string]string{AnnotationInstance: s.Name}
	if s.LeaseEnd != nil {
		// With the VM's first write: the cluster's controller expires it by this whatever
		// becomes of the sbf that made it (expiry).
		annotations[AnnotationLeaseEnd] = leaseStamp(*s.LeaseEnd)
	}
	vm := &kv.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: set.Namespace, Labels: labels,
			Annotations: annotations},
		Spec: kv.VirtualMachineSpec{
			RunStrategy: &halted,
			Template: &kv.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: copyMap(labels)},
				Spec: kv.VirtualMachineInstanceSpec{
					Architecture: arch,
					Hostname:     name,
					Domain: kv.DomainSpec{Devices: kv.Devices{
						Disks: []kv.Disk{
							{Name: rootDisk, DiskDevice: kv.DiskDevice{Disk: &kv.DiskTarget{Bus: kv.DiskBusVirtio}}},
							{Name: cloudInit, DiskDevice: kv.DiskDevice{Disk: &kv.DiskTarget{Bus: kv.DiskBusVirtio}}},
						},
						Interfaces: []kv.Interface{*kv.DefaultMasqueradeNetworkInterface()},
					}},
					Networks: []kv.Network{*kv.DefaultPodNetwork()},
					Volumes: []kv.Volume{
						rootVolume(name, img, set),
						{Name: cloudInit, VolumeSource: kv.VolumeSource{
							CloudInitNoCloud: &kv.CloudInitNoCloudSource{UserData: userData(g)}}},
					},
				},
			},
		},
	}
	labelTemplate(vm)
	if set.StorageClass != "" || img.HTTP != "" {
		vm.Spec.DataVolumeTemplates = []kv.DataVolumeTemplateSpec{dataVolume(name, img, set, s.DiskGiB)}
	}
	if set.Instancetype != "" {
		vm.Spec.Instancetype = &kv.InstancetypeMatcher{Name: set.Instancetype}
	}
	if set.Preference != "" {
		vm.Spec.Preference = &kv.PreferenceMatcher{Name: set.Preference}
	}
	size(vm, s, set)
	return vm, nil
}

// size sets the VM's CPUs and memory, unless an instancetype decides them (KubeVirt
// refuses a VM that sets both).
func size(vm *kv.VirtualMachine, s drivers.Spec, set Settings) {
	dom := &vm.Spec.Template.Spec.Domain
	if set.Instancetype != "" {
		dom.CPU, dom.Memory = nil, nil
		return
	}
	mem := gib(s.MemoryGiB)
	dom.CPU = &kv.CPU{Cores: uint32(s.CPUs), Sockets: 1, Threads: 1}
	dom.Memory = &kv.Memory{Guest: &mem}
	if dvs := vm.Spec.DataVolumeTemplates; len(dvs) == 1 && s.DiskGiB > 0 {
		dvs[0].Spec.Storage.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: gib(s.DiskGiB)}
	}
}

func rootVolume(name string, img image, set Settings) kv.Volume {
	if set.StorageClass != "" || img.HTTP != "" {
		dv := &kv.DataVolumeSource{Name: name + "-root"}
		return kv.Volume{Name: rootDisk, VolumeSource: kv.VolumeSource{DataVolume: dv}}
	}
	cd := &kv.ContainerDiskSource{Image: img.ContainerDisk}
	return kv.Volume{Name: rootDisk, VolumeSource: kv.VolumeSource{ContainerDisk: cd}}
}

// dataVolume is a persistent root disk imported by CDI from the image.
func dataVolume(name string, img image, set Settings, diskGiB float64) kv.DataVolumeTemplateSpec {
	src := &cdi.DataVolumeSource{}
	if img.HTTP != "" {
		src.HTTP = &cdi.DataVolumeSourceHTTP{URL: img.HTTP}
	} else {
		url := "docker://" + img.ContainerDisk
		src.Registry = &cdi.DataVolumeSourceRegistry{URL: &url}
	}
	st := &cdi.StorageSpec{}
	if set.StorageClass != "" {
		class := set.StorageClass
		st.StorageClassName = &class
	}
	if diskGiB > 0 {
		st.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: gib(diskGiB)}
	}
	return kv.DataVolumeTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: name + "-root"},
		Spec: cdi.DataVolumeSpec{Source: src, Storage: st}}
}

// userData is cloud-init's NoCloud user data: the user sbf logs in as, with its key.
func userData(g guest) string {
	return "#cloud-config\n" +
		"users:\n" +
		"  - name: " + g.User + "\n" +
		"    sudo: ALL=(ALL) NOPASSWD:ALL\n" +
		"    shell: /bin/bash\n" +
		"    ssh_authorized_keys:\n" +
		"      - " + g.PublicKey + "\n" +
		"ssh_pwauth: false\n"
}

// ownershipLabels mark an object as sbf's and say whose: the workspace (its id when the
// name is of the workspace sbf acts for) and sandbox a derived name names.
func ownershipLabels(instance, workspaceID string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy}
	if tag, sandbox, ok := drivers.ParseInstanceName(instance); ok {
		l[LabelWorkspaceTag] = tag
		if workspaceID != "" && drivers.WorkspaceTag(workspaceID) == tag {
			l[LabelWorkspace] = workspaceID
		}
		if v := labelValue(sandbox); v != "" {
			l[LabelSandbox] = v
		}
	}
	if shape, _, ok := drivers.ParsePoolName(instance); ok {
		l[LabelPool] = shape
	}
	return l
}

// reported is what a VM says of itself, in sbf's terms; what an instancetype or a
// containerDisk decides is not reported (zero).
func reported(vm *kv.VirtualMachine) drivers.Spec {
	var r drivers.Spec
	t := vm.Spec.Template
	if t == nil {
		return r
	}
	if c := t.Spec.Domain.CPU; c != nil && vm.Spec.Instancetype == nil {
		r.CPUs = int(c.Cores * max(c.Sockets, 1) * max(c.Threads, 1))
	}
	if m := t.Spec.Domain.Memory; m != nil && m.Guest != nil && vm.Spec.Instancetype == nil {
		r.MemoryGiB = inGiB(*m.Guest)
	}
	if dvs := vm.Spec.DataVolumeTemplates; len(dvs) == 1 && dvs[0].Spec.Storage != nil {
		if q, ok := dvs[0].Spec.Storage.Resources.Requests[corev1.ResourceStorage]; ok {
			r.DiskGiB = inGiB(q)
		}
	}
	r.Arch = drivers.CanonicalArch(t.Spec.Architecture)
	return r
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
