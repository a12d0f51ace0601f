package fakehv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/sandboxforge/sbf/drivers/hyperv/internal/psscript"
)

// exitError is a script's `exit N`; other errors are a thrown one.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// simulate runs one operation on the world, as the driver's script for it
// would on Hyper-V, and writes what PowerShell would print.
func simulate(dir string, s psscript.Script, stdout, stderr io.Writer) int {
	w, err := Load(dir)
	if err != nil {
		fmt.Fprintln(stderr, "fake powershell:", err)
		return 70
	}
	h := &host{w: &w, p: s.Params}
	ops := map[string]func() (any, error){
		"probe": func() (any, error) { return w.Probe, nil },
		"list":  h.list, "create": h.create, "start": h.start, "ip": h.ip,
		"stop": h.stop, "delete": h.delete, "reconfigure": h.reconfigure,
	}
	op, ok := ops[s.Op]
	if !ok {
		fmt.Fprintf(stderr, "fake powershell: no such operation %q\n", s.Op)
		return 65
	}
	out, err := op()
	var exit exitError
	switch {
	case errors.As(err, &exit):
		return int(exit)
	case err != nil:
		// What Windows PowerShell prints for a terminating error.
		fmt.Fprintf(
			stderr,
			"%s\nAt line:12 char:3\n+   throw\n+   ~~~~~\n    + CategoryInfo          : OperationStopped: (:) [], "+
				"RuntimeException\n",
			err,
		)
		return 1
	}
	if err := Save(dir, w); err != nil {
		fmt.Fprintln(stderr, "fake powershell:", err)
		return 70
	}
	if out != nil {
		json.NewEncoder(stdout).Encode(out)
	}
	return 0
}

// host runs the operations; p holds the script's parameters.
type host struct {
	w *World
	p map[string]any
}

func (h *host) str(name string) string { s, _ := h.p[name].(string); return s }
func (h *host) num(name string) int64  { n, _ := h.p[name].(int64); return n }

func (h *host) named(name string) []*VM {
	var out []*VM
	for _, vm := range h.w.VMs {
		if strings.EqualFold(vm.Name, name) {
			out = append(out, vm)
		}
	}
	return out
}

// sbfVM is the prologue's Get-SbfVM: exit 3 without a VM of that name,
// exit 4 unless exactly one of them carries the owner's marker.
func (h *host) sbfVM() (*VM, error) {
	named := h.named(h.str("Name"))
	if len(named) == 0 {
		return nil, exitError(3)
	}
	var ours []*VM
	for _, vm := range named {
		if strings.HasPrefix(vm.Notes, h.str("Owner")) {
			ours = append(ours, vm)
		}
	}
	if len(ours) != 1 {
		return nil, exitError(4)
	}
	return ours[0], nil
}

func (h *host) ip() (any, error) {
	vm, err := h.sbfVM()
	if err != nil {
		return nil, err
	}
	ips := []string{}
	if vm.State == "Running" {
		if vm.PollsLeft > 0 {
			vm.PollsLeft--
		} else {
			ips = append(ips, h.address())
		}
	}
	return map[string]any{"State": vm.State, "IPv4": ips}, nil
}

func (h *host) address() string {
	if h.w.IP != "" {
		return h.w.IP
	}
	return "127.0.0.1"
}

func (h *host) list() (any, error) {
	out := []map[string]any{}
	for _, vm := range h.w.VMs {
		if !strings.HasPrefix(vm.Notes, h.str("Prefix")) {
			continue
		}
		size := int64(-1)
		if disk, err := markerDisk(vm); err == nil {
			if n, err := VHDSize(disk); err == nil {
				size = n
			}
		}
		ips := []string{}
		if vm.State == "Running" && vm.PollsLeft == 0 {
			ips = append(ips, h.address())
		}
		out = append(out, map[string]any{"Name": vm.Name, "State": vm.State, "Notes": vm.Notes, "CPUs": vm.CPUs,
			"MemoryBytes": vm.MemoryBytes, "DiskBytes": size, "IPv4": ips})
	}
	return out, nil
}

func markerDisk(vm *VM) (string, error) {
	var m struct {
		Disk string `json:"disk"`
	}
	if err := json.Unmarshal([]byte(vm.Notes), &m); err != nil {
		return "", fmt.Errorf("ConvertFrom-Json: invalid JSON primitive in the Notes of %s", vm.Name)
	}
	return m.Disk, nil
}

func (h *host) create() (any, error) {
	name, base, disk := h.str("Name"), h.str("Base"), h.str("Disk")
	if len(h.named(name)) > 0 {
		return nil, fmt.Errorf("a VM named '%s' already exists", name)
	}
	baseSize, err := VHDSize(base)
	if err != nil {
		return nil, fmt.Errorf("the base image '%s' does not exist (HYPERV_BASE_VHDX)", base)
	}
	if h.num("DiskBytes") < baseSize {
		return nil, fmt.Errorf(
			"disk_gib is smaller than the base image '%s' (%v GiB): set disk_gib to at least that",
			base,
			float64(baseSize)/(1<<30),
		)
	}
	if !slices.ContainsFunc(h.w.Probe.Switches, func(s string) bool { return strings.EqualFold(s, h.str("Switch")) }) {
		return nil, fmt.Errorf("New-VM : Hyper-V was unable to find a virtual switch with name \"%s\"", h.str("Switch"))
	}
	if err := os.MkdirAll(h.str("Storage"), 0o755); err != nil {
		return nil, err
	}
	data, _ := json.Marshal(vhd{Parent: base, Size: max(baseSize, h.num("DiskBytes"))})
	if err := os.WriteFile(disk, data, 0o644); err != nil {
		return nil, err
	}
	h.w.VMs = append(h.w.VMs, &VM{Name: name, State: "Off", Notes: h.str("Notes"), Generation: 2, CPUs: int(h.num("CPUs")),
		MemoryBytes: h.num(
			"MemoryBytes",
		), Switch: h.str("Switch"), Disks: []string{disk}, SecureBoot: "MicrosoftUEFICertificateAuthority"})
	return nil, nil
}

func (h *host) start() (any, error) {
	vm, err := h.sbfVM()
	if err == nil && vm.State != "Running" {
		vm.State, vm.PollsLeft = "Running", h.w.BootPolls
	}
	return nil, err
}

func (h *host) stop() (any, error) {
	vm, err := h.sbfVM()
	if err == nil {
		vm.State = "Off"
	}
	return nil, err
}

func (h *host) delete() (any, error) {
	if len(h.named(h.str("Name"))) == 0 {
		os.Remove(h.str("Disk"))
		return nil, exitError(3)
	}
	vm, err := h.sbfVM()
	if err != nil {
		return nil, err
	}
	disk, err := markerDisk(vm)
	if err != nil {
		return nil, err
	}
	h.w.VMs = slices.DeleteFunc(h.w.VMs, func(v *VM) bool { return v == vm })
	if disk != "" && slices.Contains(vm.Disks, disk) {
		os.Remove(disk)
	}
	return nil, nil
}

func (h *host) reconfigure() (any, error) {
	vm, err := h.sbfVM()
	if err != nil {
		return nil, err
	}
	if vm.State != "Off" {
		return nil, exitError(5)
	}
	disk, err := markerDisk(vm)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(vm.Disks, disk) {
		return nil, fmt.Errorf("the disk sbf made for '%s' is no longer attached to it", vm.Name)
	}
	size, err := VHDSize(disk)
	if err != nil {
		return nil, err
	}
	if h.num("DiskBytes") < size {
		return nil, exitError(6)
	}
	vm.CPUs, vm.MemoryBytes = int(h.num("CPUs")), h.num("MemoryBytes")
	data, _ := json.Marshal(vhd{Size: h.num("DiskBytes")})
	return nil, os.WriteFile(disk, data, 0o644)
}
