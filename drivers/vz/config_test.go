package vz

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

func TestConsoleCmdline(t *testing.T) {
	for in, want := range map[string]string{
		"root=/dev/vda rw console=ttyS0 apparmor=0": "root=/dev/vda rw console=hvc0 apparmor=0",
		"root=/dev/vda console=ttyAMA0,115200":      "root=/dev/vda console=hvc0",
		"root=/dev/vda":                             "root=/dev/vda console=hvc0",
		"console=tty0 console=ttyS0 console=hvc0":   "console=tty0 console=hvc0",
		"": "console=hvc0",
	} {
		if got := consoleCmdline(in); got != want {
			t.Errorf("consoleCmdline(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTranslate(t *testing.T) {
	s := drivers.Spec{Name: "sbf-0123abcd-api", CPUs: 2, MemoryGiB: 1.5, DiskGiB: 20, Arch: "aarch64", VMType: "vz"}
	c, err := translate(s, "root=/dev/vda rw console=ttyS0", true)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Spec: s, CPUs: 2, MemoryBytes: 1536 << 20, CmdLine: "root=/dev/vda rw console=hvc0",
		MAC: macFor(s.Name).String(), User: "sbf", HasInitrd: true}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("translate:\n%+v\nwant\n%+v", c, want)
	}
	s.Image.KernelCmdline = "root=/dev/vdb quiet"
	if c, _ := translate(s, "root=/dev/vda", false); c.CmdLine != "root=/dev/vdb quiet console=hvc0" {
		t.Errorf("the spec's command line should win: %q", c.CmdLine)
	}
	for _, bad := range []drivers.Spec{{CPUs: 0, MemoryGiB: 1, DiskGiB: 1}, {CPUs: 1, DiskGiB: 1}, {CPUs: 1, MemoryGiB: 1}} {
		if _, err := translate(bad, "", false); err == nil {
			t.Errorf("translate(%+v) accepted", bad)
		}
	}
}

func TestMACIsStableLocalUnicastAndPerInstance(t *testing.T) {
	a, b := macFor("sbf-0123abcd-api"), macFor("sbf-0123abcd-web")
	if a.String() != macFor("sbf-0123abcd-api").String() || a.String() == b.String() {
		t.Errorf("macs %s %s", a, b)
	}
	for _, m := range []string{a.String(), b.String()} {
		if m[1] != '2' && m[1] != '6' && m[1] != 'a' && m[1] != 'e' {
			t.Errorf("%s is not a locally administered unicast address", m)
		}
	}
}

func TestMachineOrdersDisksRootFirst(t *testing.T) {
	f := folder{base: "/b", name: "sbf-0123abcd-api"}
	c := Config{CPUs: 1, MemoryBytes: gib, CmdLine: "root=/dev/vda console=hvc0", MAC: macFor(f.name).String()}
	m, err := machine(f, c)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("/b", f.name)
	if want := []Disk{{Path: dir + "/disk.img"}, {Path: dir + "/cidata.img", ReadOnly: true}}; !reflect.DeepEqual(m.Disks, want) {
		t.Errorf("disks %+v", m.Disks)
	}
	if m.Initrd != "" || m.Kernel != dir+"/vmlinuz" || !m.Entropy || !m.Vsock || m.ConsoleLog != dir+"/console.log" {
		t.Errorf("machine %+v", m)
	}
	c.HasInitrd = true
	if m, _ := machine(f, c); m.Initrd != dir+"/initrd.img" {
		t.Errorf("initrd %q", m.Initrd)
	}
	c.MAC = "nonsense"
	if _, err := machine(f, c); err == nil {
		t.Error("a bad MAC was accepted")
	}
}

func TestHostname(t *testing.T) {
	if h := hostname("sbf-0123abcd-my_box"); h != "sbf-0123abcd-my-box" {
		t.Errorf("hostname %q", h)
	}
	if h := hostname("sbf-0123abcd-" + strings.Repeat("a", 49) + "-b"); len(h) > 63 || strings.HasSuffix(h, "-") {
		t.Errorf("hostname %q", h)
	}
}

func TestSocketPathFitsASockaddr(t *testing.T) {
	short := folder{base: "/tmp/vz", name: "sbf-0123abcd-api"}
	if got := short.socket(); got != "/tmp/vz/sbf-0123abcd-api/control.sock" {
		t.Errorf("socket %q", got)
	}
	long := folder{base: "/Users/someone-with-a-long-name/.local/state/sandboxforge/vz", name: "sbf-0123abcd-" + strings.Repeat("x", 40)}
	got := long.socket()
	if len(got) > maxSocketBytes || !strings.HasPrefix(got, long.base+"/run/") {
		t.Errorf("socket %q (%d bytes)", got, len(got))
	}
	other := long
	other.name += "y"
	if other.socket() == got {
		t.Error("two instances share a socket")
	}
}
