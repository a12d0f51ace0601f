package vz

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
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
	want := layout.Config{Spec: s, CPUs: 2, MemoryBytes: 1536 << 20, CmdLine: "root=/dev/vda rw console=hvc0",
		MAC: macFor(s.Name).String(), User: "sbf", HasInitrd: true}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("translate:\n%+v\nwant\n%+v", c, want)
	}
	s.Image.KernelCmdline = "root=/dev/vdb quiet"
	if c, _ := translate(s, "root=/dev/vda", false); c.CmdLine != "root=/dev/vdb quiet console=hvc0" {
		t.Errorf("the spec's command line should win: %q", c.CmdLine)
	}
	noCPUs, noMemory, noDisk := drivers.Spec{MemoryGiB: 1, DiskGiB: 1}, drivers.Spec{CPUs: 1, DiskGiB: 1},
		drivers.Spec{CPUs: 1, MemoryGiB: 1}
	for _, bad := range []drivers.Spec{noCPUs, noMemory, noDisk} {
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

func TestHostname(t *testing.T) {
	if h := hostname("sbf-0123abcd-my_box"); h != "sbf-0123abcd-my-box" {
		t.Errorf("hostname %q", h)
	}
	if h := hostname("sbf-0123abcd-" + strings.Repeat("a", 49) + "-b"); len(h) > 63 || strings.HasSuffix(h, "-") {
		t.Errorf("hostname %q", h)
	}
}
