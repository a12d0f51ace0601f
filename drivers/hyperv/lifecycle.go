package hyperv

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"

	"github.com/sandboxforge/sbf/drivers"
)

// listedVM is one VM as the list script reports it.
type listedVM struct {
	Name        string  `json:"Name"`
	State       string  `json:"State"`
	Notes       string  `json:"Notes"`
	CPUs        int     `json:"CPUs"`
	MemoryBytes int64   `json:"MemoryBytes"`
	DiskBytes   int64   `json:"DiskBytes"` // -1: its disk is gone
	IPv4        psArray `json:"IPv4"`
}

// List reports the VMs whose Notes carry sbf's marker for their own
// name, and nothing else.
func (d *Driver) List(ctx context.Context) ([]drivers.Instance, error) {
	out, err := d.run(ctx, listScript())
	if err != nil {
		return nil, fmt.Errorf("listing Hyper-V VMs: %w", err)
	}
	vms, err := parseList(out)
	if err != nil {
		return nil, err
	}
	var insts []drivers.Instance
	for _, vm := range vms {
		if _, ok := parseMarker(vm.Notes, vm.Name); ok {
			insts = append(insts, vm.instance(d.opts.SSHPort))
		}
	}
	return insts, nil
}

// parseList reads the list script's JSON: an array, a single object (one
// VM), or nothing (none).
func parseList(out []byte) ([]listedVM, error) {
	items, err := unwrapArray(out)
	if err != nil {
		return nil, fmt.Errorf("parsing the Hyper-V VM list: %w", err)
	}
	vms := make([]listedVM, 0, len(items))
	for i, raw := range items {
		var vm listedVM
		if err := json.Unmarshal(raw, &vm); err != nil {
			return nil, fmt.Errorf("parsing the Hyper-V VM list: item %d: %w", i+1, err)
		}
		vms = append(vms, vm)
	}
	return vms, nil
}

func (vm listedVM) instance(sshPort string) drivers.Instance {
	inst := drivers.Instance{Name: vm.Name, Driver: Name, Status: status(vm.State), Reported: drivers.Spec{
		Name: vm.Name, CPUs: vm.CPUs, MemoryGiB: gib(vm.MemoryBytes), DiskGiB: gib(max(vm.DiskBytes, 0)),
	}}
	if vm.DiskBytes < 0 {
		inst.Status = drivers.Broken
	}
	if ip := firstIPv4(vm.IPv4); ip != "" && inst.Status == drivers.Running {
		inst.SSH = net.JoinHostPort(ip, sshPort)
	}
	return inst
}

// status maps Hyper-V's VM states. A state on its way somewhere counts as
// where it is going; one Start or Stop settles any of them. Critical
// states (storage lost) are broken.
func status(state string) drivers.Status {
	switch state {
	case "Running", "Starting", "Resuming", "Reset", "ForceReboot":
		return drivers.Running
	case "Off",
		"Stopping",
		"ForceShutdown",
		"Saved",
		"Saving",
		"Paused",
		"Pausing",
		"FastSaved",
		"FastSaving",
		"Hibernated":
		return drivers.Stopped
	}
	return drivers.Broken
}

func firstIPv4(ips []string) string {
	for _, s := range ips {
		if ip := net.ParseIP(s); ip != nil && ip.To4() != nil {
			return s
		}
	}
	return ""
}

func gib(bytes int64) float64 { return float64(bytes) / (1 << 30) }

// bytesOf converts GiB the way Validate demands they divide (memory in
// 2 MiB steps, disks in 1 MiB ones), so what List reports reads back as
// exactly what was asked.
func bytesOf(gib float64) int64 { return int64(math.Round(gib * (1 << 30))) }

// Create makes a stopped VM: a differencing disk over the base image,
// grown to disk_gib, a Generation 2 VM on the switch with sbf's marker.
func (d *Driver) Create(ctx context.Context, s drivers.Spec) error {
	if err := d.Validate(ctx, s); err != nil {
		return err
	}
	base := d.parent(s)
	if err := d.checkBase(base); err != nil {
		return err
	}
	sc, err := d.createScript(s)
	if err != nil {
		return err
	}
	if _, err := d.run(ctx, sc); err != nil {
		return fmt.Errorf("creating Hyper-V VM %s: %w", s.Name, err)
	}
	return nil
}

// parent is the disk an instance is made from: its [vm.image] location,
// else HYPERV_BASE_VHDX.
func (d *Driver) parent(s drivers.Spec) string {
	if s.Image.Location != "" {
		return s.Image.Location
	}
	return d.opts.BaseVHDX
}

// owned runs a script acting on one of sbf's VMs and names its refusals.
func (d *Driver) owned(ctx context.Context, op, name string, extra ...param) ([]byte, error) {
	out, err := d.run(ctx, d.ownedScript(op, name, extra...))
	switch exitCode(err) {
	case exitNotFound:
		return nil, fmt.Errorf("Hyper-V VM %s: %w", name, drivers.ErrNotFound)
	case exitNotOwned:
		return nil, fmt.Errorf(
			"Hyper-V VM %s was not made by sbf (its Notes lack sbf's marker), or several VMs share the name: sbf leaves it "+
				"alone",
			name,
		)
	case exitRunning:
		return nil, fmt.Errorf("Hyper-V VM %s must be stopped to change it", name)
	case exitShrink:
		return nil, fmt.Errorf("disk_gib: Hyper-V VM %s: a disk cannot shrink; destroy and recreate the sandbox", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s of Hyper-V VM %s: %w", op, name, err)
	}
	return out, nil
}

// Stop turns a VM off (v1: Stop-VM -TurnOff), as a power cut would.
func (d *Driver) Stop(ctx context.Context, name string) error {
	d.Pool.Drop(name)
	_, err := d.owned(ctx, "stop", name)
	return err
}

// Delete turns a VM off, removes it and the disk sbf made for it.
func (d *Driver) Delete(ctx context.Context, name string) error {
	d.Pool.Drop(name)
	_, err := d.owned(ctx, "delete", name)
	return err
}

// Reconfigure applies cpus, memory and a larger disk to a stopped VM. The
// guest grows its file system into a larger disk itself (cloud-init's
// growpart does at boot).
func (d *Driver) Reconfigure(ctx context.Context, s drivers.Spec) error {
	if err := d.Validate(ctx, s); err != nil {
		return err
	}
	_, err := d.owned(ctx, "reconfigure", s.Name, resources(s)...)
	return err
}
