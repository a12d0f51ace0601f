package vz

import (
	"context"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/images"
)

// entitlement is what Virtualization.framework requires of the process.
const entitlement = "com.apple.security.virtualization"

// Diagnose says whether vz can run these VMs here, checking everything
// without stopping at the first problem (sbf doctor).
func Diagnose(ctx context.Context, o Options, specs []drivers.Spec) drivers.Diagnosis {
	diag := drivers.Diagnosis{Driver: Name}
	if o.HostOS != "darwin" {
		diag.Add(drivers.Check{Name: "host", Status: drivers.CheckFail, NextSteps: offMac,
			Detail: fmt.Sprintf("needs macOS: Apple's Virtualization.framework exists only there; "+
				"this host runs %s/%s", o.HostOS, o.HostArch)})
		diag.Finish()
		diag.Summary = "needs macOS"
		return diag
	}
	d := newDriver(o)
	o = d.opts
	diag.Add(checkMacOS(o))
	if frameworkMissing != "" {
		diag.Add(drivers.Check{Name: "build", Status: drivers.CheckFail, Detail: frameworkMissing,
			NextSteps: []string{"use an sbf built on macOS with cgo (CGO_ENABLED=1, the default there)"}})
	}
	if o.StartSupervisor == nil {
		diag.Add(drivers.Check{Name: "supervisor", Status: drivers.CheckFail, Detail: "this sbf cannot start sbf vz-run",
			NextSteps: []string{"run sbf or sbf-server itself, not sbf's command line in process"}})
	}
	diag.Add(checkEntitlement(o))
	for _, s := range specs {
		diag.Add(d.checkSpec(ctx, s))
	}
	diag.Add(checkWritable(o.Dir))
	diag.Finish()
	diag.Summary = "usable (Virtualization.framework)"
	if !diag.Usable {
		diag.Summary = "cannot run VMs here yet: see the failed checks"
	}
	return diag
}

// checkMacOS needs macOS 12: the first with a forced stop and the state
// notifications the supervisor relies on.
func checkMacOS(o Options) drivers.Check {
	v, err := o.osVersion()
	if err != nil {
		return drivers.Check{Name: "macOS", Status: drivers.CheckWarn, Detail: "version unknown: " + err.Error()}
	}
	major, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if major < 12 {
		return drivers.Check{Name: "macOS", Status: drivers.CheckFail,
			Detail:    "macOS " + v + " is too old; the vz driver needs macOS 12 or newer",
			NextSteps: []string{"upgrade macOS", `or use the lima driver ([vm] driver = "lima")`}}
	}
	detail := fmt.Sprintf("macOS %s on %s", v, drivers.CanonicalArch(o.HostArch))
	return drivers.Check{Name: "macOS", Status: drivers.CheckOK, Detail: detail}
}

// checkEntitlement: an unsigned sbf cannot create VMs (the framework
// refuses at the first boot, with an opaque error).
func checkEntitlement(o Options) drivers.Check {
	out, err := o.entitlements()
	if err == nil && strings.Contains(out, entitlement) {
		return drivers.Check{Name: "entitlement", Status: drivers.CheckOK, Detail: "sbf is signed with " + entitlement}
	}
	detail := "sbf is not signed with " + entitlement + ", which Virtualization.framework requires"
	if err != nil {
		detail += " (" + err.Error() + ")"
	}
	return drivers.Check{Name: "entitlement", Status: drivers.CheckFail, Detail: detail, NextSteps: []string{
		`sign it (again after every build): ` +
			`codesign --force --sign - --entitlements drivers/vz/sbf.entitlements "$(command -v sbf)"`}}
}

// codesignEntitlements asks codesign what this executable is entitled to.
func codesignEntitlements() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("codesign", "-d", "--entitlements", "-", "--xml", exe)
	proc.Group(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("codesign -d %s: %v: %s", exe, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// checkSpec is one sandbox: what Validate refuses, then its image.
func (d *Driver) checkSpec(ctx context.Context, s drivers.Spec) drivers.Check {
	name := "sandbox " + s.Name
	if _, sandbox, ok := drivers.ParseInstanceName(s.Name); ok {
		name = "sandbox " + sandbox
	}
	if err := d.Validate(ctx, s); err != nil {
		return drivers.Check{Name: name, Status: drivers.CheckFail, Detail: err.Error()}
	}
	if imageName, ok := images.NameOf(s.Image.Location); ok {
		im, err := d.opts.Image(imageName, d.arch(s))
		if err != nil {
			return drivers.CheckFromError(name, err)
		}
		return drivers.Check{Name: name, Status: drivers.CheckOK, Detail: "image built: " + im.Dir}
	}
	for _, p := range []string{s.Image.Location, s.Image.Kernel, s.Image.Initrd} {
		if _, err := os.Stat(p); p != "" && err != nil {
			return drivers.Check{Name: name, Status: drivers.CheckFail, Detail: "cannot read " + p + ": " + err.Error()}
		}
	}
	return drivers.Check{Name: name, Status: drivers.CheckOK, Detail: "boots " + s.Image.Kernel}
}

// checkWritable proves sbf can keep instances in dir.
func checkWritable(dir string) drivers.Check {
	fail := func(err error) drivers.Check {
		return drivers.Check{Name: "instances folder", Status: drivers.CheckFail, Detail: dir + ": " + err.Error(),
			NextSteps: []string{"set SBF_VZ_HOME to a folder this user can write"}}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return fail(err)
	}
	f.Close()
	os.Remove(f.Name())
	return drivers.Check{Name: "instances folder", Status: drivers.CheckOK, Detail: dir + " is writable"}
}
