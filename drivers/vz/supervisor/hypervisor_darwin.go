//go:build darwin && cgo

package supervisor

import (
	"context"
	"errors"
	"fmt"

	"github.com/Code-Hex/vz/v3"
)

// Every call into Virtualization.framework is in this file. It cannot be
// compiled without a Mac (cgo), so `make check-darwin` type-checks it
// against a stub of github.com/Code-Hex/vz/v3 generated from that
// module's own source (see drivers/vz/internal/stubgen).

func hostHypervisor() (Hypervisor, string) { return frameworkHypervisor{}, "" }

type frameworkHypervisor struct{}

func (frameworkHypervisor) Boot(_ context.Context, m MachineConfig) (Machine, error) {
	cfg, err := configure(m)
	if err != nil {
		return nil, err
	}
	if ok, err := cfg.Validate(); !ok || err != nil {
		if err == nil {
			err = errors.New("no reason given")
		}
		return nil, fmt.Errorf("the framework refused the configuration: %w", err)
	}
	vm, err := vz.NewVirtualMachine(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the virtual machine: %w", err)
	}
	fm := &frameworkMachine{vm: vm, done: make(chan error, 1)}
	go fm.watch()
	if err := vm.Start(); err != nil {
		return nil, fmt.Errorf("starting the virtual machine: %w", err)
	}
	return fm, nil
}

// configure translates a MachineConfig device by device.
func configure(m MachineConfig) (*vz.VirtualMachineConfiguration, error) {
	opts := []vz.LinuxBootLoaderOption{vz.WithCommandLine(m.CmdLine)}
	if m.Initrd != "" {
		opts = append(opts, vz.WithInitrd(m.Initrd))
	}
	boot, err := vz.NewLinuxBootLoader(m.Kernel, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading the kernel %s: %w", m.Kernel, err)
	}
	cfg, err := vz.NewVirtualMachineConfiguration(boot, m.CPUs, m.MemoryBytes)
	if err != nil {
		return nil, fmt.Errorf("configuring %d CPUs and %d bytes of memory: %w", m.CPUs, m.MemoryBytes, err)
	}
	if err := addDisks(cfg, m.Disks); err != nil {
		return nil, err
	}
	if err := addNetwork(cfg, m); err != nil {
		return nil, err
	}
	if err := addConsole(cfg, m.ConsoleLog); err != nil {
		return nil, err
	}
	return cfg, addDevices(cfg, m)
}

func addDisks(cfg *vz.VirtualMachineConfiguration, disks []Disk) error {
	var devices []vz.StorageDeviceConfiguration
	for _, d := range disks {
		att, err := vz.NewDiskImageStorageDeviceAttachment(d.Path, d.ReadOnly)
		if err != nil {
			return fmt.Errorf("attaching %s: %w", d.Path, err)
		}
		dev, err := vz.NewVirtioBlockDeviceConfiguration(att)
		if err != nil {
			return fmt.Errorf("configuring the virtio disk %s: %w", d.Path, err)
		}
		devices = append(devices, dev)
	}
	cfg.SetStorageDevicesVirtualMachineConfiguration(devices)
	return nil
}

func addNetwork(cfg *vz.VirtualMachineConfiguration, m MachineConfig) error {
	nat, err := vz.NewNATNetworkDeviceAttachment()
	if err != nil {
		return fmt.Errorf("configuring NAT networking: %w", err)
	}
	nic, err := vz.NewVirtioNetworkDeviceConfiguration(nat)
	if err != nil {
		return fmt.Errorf("configuring the virtio network device: %w", err)
	}
	mac, err := vz.NewMACAddress(m.MAC)
	if err != nil {
		return fmt.Errorf("setting the MAC address %s: %w", m.MAC, err)
	}
	nic.SetMACAddress(mac)
	cfg.SetNetworkDevicesVirtualMachineConfiguration([]*vz.VirtioNetworkDeviceConfiguration{nic})
	return nil
}

// addConsole appends the guest's hvc0 to the console log; the guest
// gets no input.
func addConsole(cfg *vz.VirtualMachineConfiguration, logPath string) error {
	att, err := vz.NewFileSerialPortAttachment(logPath, true)
	if err != nil {
		return fmt.Errorf("attaching the console log %s: %w", logPath, err)
	}
	serial, err := vz.NewVirtioConsoleDeviceSerialPortConfiguration(att)
	if err != nil {
		return fmt.Errorf("configuring the virtio console: %w", err)
	}
	cfg.SetSerialPortsVirtualMachineConfiguration([]*vz.VirtioConsoleDeviceSerialPortConfiguration{serial})
	return nil
}

// addDevices adds virtio-rng, vsock and the memory balloon.
func addDevices(cfg *vz.VirtualMachineConfiguration, m MachineConfig) error {
	if m.Entropy {
		rng, err := vz.NewVirtioEntropyDeviceConfiguration()
		if err != nil {
			return fmt.Errorf("configuring virtio-rng: %w", err)
		}
		cfg.SetEntropyDevicesVirtualMachineConfiguration([]*vz.VirtioEntropyDeviceConfiguration{rng})
	}
	if m.Vsock {
		sock, err := vz.NewVirtioSocketDeviceConfiguration()
		if err != nil {
			return fmt.Errorf("configuring vsock: %w", err)
		}
		cfg.SetSocketDevicesVirtualMachineConfiguration([]vz.SocketDeviceConfiguration{sock})
	}
	if m.Balloon {
		balloon, err := vz.NewVirtioTraditionalMemoryBalloonDeviceConfiguration()
		if err != nil {
			return fmt.Errorf("configuring the memory balloon: %w", err)
		}
		cfg.SetMemoryBalloonDevicesVirtualMachineConfiguration([]vz.MemoryBalloonDeviceConfiguration{balloon})
	}
	return nil
}

type frameworkMachine struct {
	vm   *vz.VirtualMachine
	done chan error
}

// watch delivers the machine's end: the framework reports every state
// change, the final one being stopped (a power-off) or error.
func (m *frameworkMachine) watch() {
	for state := range m.vm.StateChangedNotify() {
		switch state {
		case vz.VirtualMachineStateStopped:
			m.done <- nil
			return
		case vz.VirtualMachineStateError:
			m.done <- errors.New("the virtual machine stopped with an error (see console.log)")
			return
		}
	}
}

func (m *frameworkMachine) RequestStop() error {
	if !m.vm.CanRequestStop() {
		return fmt.Errorf("the guest cannot be asked to stop in state %v", m.vm.State())
	}
	ok, err := m.vm.RequestStop()
	if err == nil && !ok {
		err = errors.New("the stop request was not delivered")
	}
	return err
}

func (m *frameworkMachine) Stop() error {
	if !m.vm.CanStop() {
		return fmt.Errorf("the machine cannot be stopped in state %v", m.vm.State())
	}
	return m.vm.Stop()
}

func (m *frameworkMachine) Done() <-chan error { return m.done }
