package hyperv

import (
	"context"
	"os"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
)

// Diagnose says whether Hyper-V can run these VMs here, checking
// everything a first run needs without stopping at the first problem.
func Diagnose(ctx context.Context, o Options, specs []drivers.Spec) drivers.Diagnosis {
	d := newDriver(o)
	diag := drivers.Diagnosis{Driver: Name}
	add := diag.Require
	if !add("host", d.opts.HostOS+"/"+d.opts.HostArch, d.checkHost()) {
		diag.Finish()
		diag.Summary = "needs Windows (Hyper-V); this host runs " + d.opts.HostOS
		return diag
	}
	err := d.findPowerShell()
	if err == nil {
		err = d.runProbe(ctx) // what the checks below read
	}
	if add("powershell", "PowerShell "+d.probe.PSVersion+" ("+d.probe.PSEdition+") at "+d.powershell, err) &&
		add("hyper-v", "the Hyper-V module is available and this user may use it", d.checkHyperV()) {
		diag.Add(d.diagnoseSwitch())
	}
	for _, parent := range parents(d, specs) {
		add("base image", parent, d.checkBase(parent))
	}
	add("ssh key", d.opts.SSHKey+" ("+d.opts.SSHUser+"@VM:"+d.opts.SSHPort+")", d.checkKey())
	diag.Add(d.diagnoseStorage())
	diag.Finish()
	diag.Summary = "usable"
	if !diag.Usable {
		diag.Summary = "cannot run VMs here yet: see the failed checks"
	}
	return diag
}

// parents lists the distinct parent disks the specs boot from.
func parents(d *Driver, specs []drivers.Spec) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, s := range specs {
		if p := d.parent(s); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if len(specs) == 0 {
		out = append(out, d.opts.BaseVHDX)
	}
	return out
}

func (d *Driver) diagnoseSwitch() drivers.Check {
	c := drivers.Check{Name: "switch", Status: drivers.CheckOK, Detail: d.opts.Switch}
	switch {
	case d.probe.SwitchError != "":
		c.Status, c.Detail = drivers.CheckFail, "listing switches failed: "+d.probe.SwitchError
	case !d.hasSwitch():
		c.Status, c.Detail = drivers.CheckFail, "no virtual switch named "+d.opts.Switch+" (HYPERV_SWITCH_NAME)"
		c.NextSteps = []string{
			"the Default Switch comes with Hyper-V on Windows 10/11; on Server create one: New-VMSwitch -Name sbf " +
				"-SwitchType Internal, plus NAT and DHCP for it",
		}
		if len(d.probe.Switches) > 0 {
			c.NextSteps = append(
				[]string{"set HYPERV_SWITCH_NAME to one of: " + strings.Join(d.probe.Switches, ", ")},
				c.NextSteps...)
		}
	}
	return c
}

// diagnoseStorage proves sbf can write the folder it keeps disks in.
func (d *Driver) diagnoseStorage() drivers.Check {
	dir := d.opts.StorageDir
	steps := []string{"set HYPERV_STORAGE_DIR to a folder this user can write, on a disk with room for the VMs"}
	if dir == "" {
		return drivers.Check{
			Name:      "storage",
			Status:    drivers.CheckFail,
			Detail:    "no folder for disks (HYPERV_STORAGE_DIR, or sbf's state folder)",
			NextSteps: steps,
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return drivers.Check{Name: "storage", Status: drivers.CheckFail, Detail: err.Error(), NextSteps: steps}
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return drivers.Check{
			Name:      "storage",
			Status:    drivers.CheckFail,
			Detail:    dir + " is not writable: " + err.Error(),
			NextSteps: steps,
		}
	}
	f.Close()
	os.Remove(f.Name())
	return drivers.Check{Name: "storage", Status: drivers.CheckOK, Detail: dir + " is writable"}
}
