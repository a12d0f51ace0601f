package supervisor

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
)

func TestMachineOrdersDisksRootFirst(t *testing.T) {
	f := layout.Folder{Base: "/b", Name: "sbf-0123abcd-api"}
	c := layout.Config{CPUs: 1, MemoryBytes: 1 << 30, CmdLine: "root=/dev/vda console=hvc0", MAC: "02:00:00:12:34:56"}
	m, err := machine(f, c)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("/b", f.Name)
	want := []Disk{{Path: dir + "/disk.img"}, {Path: dir + "/cidata.img", ReadOnly: true}}
	if !reflect.DeepEqual(m.Disks, want) {
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
