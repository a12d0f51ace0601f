package lima

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// Golden lima.yaml files: what sbf pipes to `limactl create`.
func TestGeneratedYAML(t *testing.T) {
	direct := drivers.Image{Location: "/cache/img/disk.ext4", Kernel: "/cache/img/vmlinuz",
		KernelCmdline: "root=/dev/vda rw console=ttyS0 apparmor=0", Initrd: "/cache/img/initrd.img"}
	cases := map[string]drivers.Spec{
		"no-mounts": {Name: "sbf-01234567-api", CPUs: 2, MemoryGiB: 2, DiskGiB: 10, VMType: "qemu", Arch: "x86_64",
			Image: direct},
		"ports-and-mounts": {Name: "sbf-01234567-web", CPUs: 4, MemoryGiB: 2.5, DiskGiB: 20, VMType: "vz",
			Arch:   "aarch64",
			Image:  drivers.Image{Location: "https://example.invalid/ubuntu.img", Digest: "sha256:0123"},
			Mounts: []string{"/src/app", "/src/data:/data:rw"}, Ports: []string{"8080:80", "9000"}},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			d := &Driver{opts: Options{HostArch: "amd64"}}
			images, err := d.specImages(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := generate(s, images)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				os.WriteFile(path, got, 0o644)
			}
			want, _ := os.ReadFile(path)
			if string(got) != string(want) {
				t.Errorf("lima.yaml differs from %s (go test ./drivers/lima -update):\n%s", path, got)
			}
		})
	}
}

// A spec without mounts must produce a lima.yaml without any.
func TestNoMountsMeansNoMounts(t *testing.T) {
	got, _ := generate(drivers.Spec{Name: "x", CPUs: 1, MemoryGiB: 1, DiskGiB: 5, VMType: "qemu"},
		[]image{{Location: "/d"}})
	text := string(got)
	if !strings.Contains(text, "mounts: []") || strings.Contains(text, "location: \"~\"") ||
		strings.Contains(text, "mountPoint") {
		t.Errorf("lima.yaml:\n%s", text)
	}
	if !strings.Contains(text, "ignore: true") {
		t.Error("undeclared guest ports would be forwarded")
	}
}

// v1's template:docker still works for the images (base chain followed),
// but the template's mounts (the host's home directory) never come along.
func TestTemplateBringsImagesNotMounts(t *testing.T) {
	f := newFake(t)
	f.env["LIMA_TEMPLATES_PATH"] = moduleTemplates(t, true)
	d := f.driver()
	err := d.Create(context.Background(), drivers.Spec{Name: "sbf-01234567-api", CPUs: 1, MemoryGiB: 2, DiskGiB: 15,
		VMType: "qemu", Arch: "x86_64", Template: "template:docker"})
	if err != nil {
		t.Fatal(err)
	}
	created, _ := os.ReadFile(filepath.Join(f.dir, "created.yaml"))
	text := string(created)
	if !strings.Contains(text, "ubuntu-24.04-server-cloudimg-amd64.img") ||
		!strings.Contains(text, "cloudimg-arm64.img") ||
		strings.Contains(text, `"~"`) || strings.Contains(text, "/tmp/lima") || !strings.Contains(text, "mounts: []") {
		t.Errorf("created lima.yaml:\n%s", text)
	}
}

func TestMountAndPortParsing(t *testing.T) {
	if _, err := parseMounts([]string{"/a:/b:/c"}); err == nil {
		t.Error("a mount with three paths was accepted")
	}
	m, _ := parseMounts([]string{"/a:rw", "/b:/guest:ro"})
	if !m[0].Writable || m[0].MountPoint != "" || m[1].Writable || m[1].MountPoint != "/guest" {
		t.Errorf("mounts = %+v", m)
	}
	p, _ := parsePorts([]string{"9000"})
	if p[0].GuestPort != 9000 || p[0].HostPort != 9000 || p[0].HostIP != "127.0.0.1" {
		t.Errorf("ports = %+v", p)
	}
}
