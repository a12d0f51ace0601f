package supervisor

import (
	"fmt"
	"net"

	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
)

// MachineConfig is what a supervisor asks the hypervisor to boot: plain
// values, so everything up to the framework's own calls is tested
// anywhere.
type MachineConfig struct {
	CPUs        uint
	MemoryBytes uint64
	Kernel      string
	Initrd      string // empty: none
	CmdLine     string
	// Disks are virtio block devices in guest order: the root disk is
	// /dev/vda, the cloud-init seed /dev/vdb.
	Disks      []Disk
	MAC        net.HardwareAddr // of the one NAT network device
	ConsoleLog string           // the guest's virtio console (hvc0) is appended here
	Entropy    bool             // virtio-rng
	Vsock      bool             // a virtio socket device
	Balloon    bool             // a memory balloon, so macOS can take memory back
}

// Disk is one virtio block device.
type Disk struct {
	Path     string
	ReadOnly bool
}

// machine is the bootable machine an instance folder describes.
func machine(f layout.Folder, c layout.Config) (MachineConfig, error) {
	mac, err := net.ParseMAC(c.MAC)
	if err != nil {
		return MachineConfig{}, fmt.Errorf("the configuration of %s has a bad MAC address: %w", f.Name, err)
	}
	m := MachineConfig{
		CPUs:        c.CPUs,
		MemoryBytes: c.MemoryBytes,
		Kernel:      f.Path(layout.KernelFile),
		CmdLine:     c.CmdLine,
		Disks:       []Disk{{Path: f.Path(layout.DiskFile)}, {Path: f.Path(layout.SeedFile), ReadOnly: true}},
		MAC:         mac,
		ConsoleLog:  f.Path(layout.ConsoleFile),
		Entropy:     true,
		Vsock:       true,
		Balloon:     true,
	}
	if c.HasInitrd {
		m.Initrd = f.Path(layout.InitrdFile)
	}
	return m, nil
}
