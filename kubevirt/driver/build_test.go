package driver

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sandboxforge/sbf/drivers"
)

func TestObjectNamesAreValidAndDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, inst := range []string{
		drivers.InstanceName("ws_c0ffee00aabb", "api"),
		drivers.InstanceName("ws_c0ffee00aabb", "API"),
		drivers.InstanceName("ws_c0ffee00aabb", "my_box"),
		drivers.InstanceName("ws_c0ffee00aabb", "my-box"),
		drivers.InstanceName("ws_c0ffee00aabb", strings.Repeat("Long_", 20)+"x"),
		drivers.PoolInstanceName("0123abcd", 3),
	} {
		name := ObjectName(inst)
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("%s → %q: %v", inst, name, errs)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s both → %s", inst, other, name)
		}
		seen[name] = inst
	}
	if got := ObjectName("sbf-c0ffee00-api"); got != "sbf-c0ffee00-api" {
		t.Errorf("a name Kubernetes takes was changed to %s", got)
	}
}

func TestAVMIsWhatTheSpecAsks(t *testing.T) {
	set := Settings{Namespace: "ns", Image: DefaultImage, SSHUser: "sbf"}
	g := guest{WorkspaceID: "ws_c0ffee00aabb", User: "sbf", PublicKey: "ssh-ed25519 AAAA k"}
	s := drivers.Spec{Name: drivers.InstanceName("ws_c0ffee00aabb", "api"), CPUs: 3, MemoryGiB: 1.5, DiskGiB: 20,
		Arch: "aarch64"}
	vm, err := newVM(s, set, g)
	if err != nil {
		t.Fatal(err)
	}
	r := reported(vm)
	if r.CPUs != 3 || r.MemoryGiB != 1.5 || r.DiskGiB != 0 || r.Arch != "aarch64" {
		t.Errorf("a containerDisk VM reports %+v", r)
	}
	if got := vm.Spec.Template.Spec.Domain.Memory.Guest.String(); got != "1536Mi" {
		t.Errorf("memory %s", got)
	}
	if cd := vm.Spec.Template.Spec.Volumes[0].ContainerDisk; cd == nil || cd.Image != DefaultImage {
		t.Errorf("root volume %+v", vm.Spec.Template.Spec.Volumes[0])
	}
	if ud := vm.Spec.Template.Spec.Volumes[1].CloudInitNoCloud.UserData; !strings.Contains(ud, "- ssh-ed25519 AAAA k") {
		t.Errorf("cloud-init lacks the key:\n%s", ud)
	}
	if l := vm.Labels; l[LabelWorkspace] != g.WorkspaceID || l[LabelSandbox] != "api" || l[LabelManagedBy] != ManagedBy {
		t.Errorf("labels %v", vm.Labels)
	}

	set.StorageClass = "fast"
	vm, _ = newVM(s, set, g)
	if r := reported(vm); r.DiskGiB != 20 {
		t.Errorf("a DataVolume VM reports a %v GiB disk", r.DiskGiB)
	}
	dv := vm.Spec.DataVolumeTemplates[0]
	if *dv.Spec.Storage.StorageClassName != "fast" || *dv.Spec.Source.Registry.URL != "docker://"+DefaultImage {
		t.Errorf("DataVolume %+v", dv.Spec)
	}

	set.StorageClass = ""
	s.Backend = map[string]string{"instancetype": "u1.small", "image": "reg.example/disk:1"}
	vm, _ = newVM(s, set, g)
	if vm.Spec.Instancetype.Name != "u1.small" ||
		vm.Spec.Template.Spec.Volumes[0].ContainerDisk.Image != "reg.example/disk:1" {
		t.Errorf("[vm.kubevirt] settings not applied: %+v", vm.Spec)
	}
	if r := reported(vm); r.CPUs != 0 || r.MemoryGiB != 0 || vm.Spec.Template.Spec.Domain.CPU != nil {
		t.Errorf("with an instancetype the VM still sizes itself: %+v", r)
	}
}

func TestWhatAClusterVMCannotBeIsAPlanProblem(t *testing.T) {
	d := &Driver{set: Settings{Namespace: "ns", Image: DefaultImage}}
	base := drivers.Spec{Name: "sbf-c0ffee00-api", CPUs: 1, MemoryGiB: 1}
	for key, s := range map[string]drivers.Spec{
		"mounts":             {Name: base.Name, Mounts: []string{"/src"}},
		"ports":              {Name: base.Name, Ports: []string{"8080:80"}},
		"image.location":     {Name: base.Name, Image: drivers.Image{Location: "/var/images/disk.img"}},
		"image.kernel":       {Name: base.Name, Image: drivers.Image{Location: "docker://x", Kernel: "/vmlinuz"}},
		"arch":               {Name: base.Name, Arch: "riscv64"},
		"kubevirt.namespace": {Name: base.Name, Backend: map[string]string{"namespace": "elsewhere"}},
		"kubevirt.colour":    {Name: base.Name, Backend: map[string]string{"colour": "blue"}},
	} {
		var se *drivers.SpecError
		if err := d.Validate(context.Background(), s); !errors.As(err, &se) || se.Key != key {
			t.Errorf("%s: %v", key, err)
		}
	}
	for _, loc := range []string{"", "docker://quay.io/containerdisks/fedora:41", "https://example.org/disk.qcow2"} {
		s := base
		s.Image.Location = loc
		if err := d.Validate(context.Background(), s); err != nil {
			t.Errorf("image %q: %v", loc, err)
		}
	}
}

// Before sbf says which workspace it acts for, with no namespace configured, the driver
// acts nowhere (an empty namespace would be all of them).
func TestNoNamespaceNoAction(t *testing.T) {
	d := &Driver{}
	var u *drivers.UnavailableError
	if _, err := d.List(t.Context()); !errors.As(err, &u) {
		t.Errorf("List: %v", err)
	}
	if err := d.Create(t.Context(), drivers.Spec{Name: "sbf-c0ffee00-a"}); !errors.As(err, &u) {
		t.Errorf("Create: %v", err)
	}
	if err := d.Stop(t.Context(), "sbf-c0ffee00-a"); !errors.As(err, &u) {
		t.Errorf("Stop: %v", err)
	}
}
