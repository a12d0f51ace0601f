// Package hyperv drives Hyper-V on Windows through PowerShell, as
// SandboxForge v1 did: each instance is a Generation 2 VM on a
// differencing disk over a base VHDX, reached over SSH at the IPv4
// address Hyper-V reports for it. Every value reaches PowerShell as a
// single-quoted literal in a parameter block ahead of a constant body
// (scripts/), and the VM's Notes carry sbf's marker, so sbf lists and
// touches only the VMs it made.
//
// It compiles everywhere and is usable only on Windows; everything but
// Hyper-V itself is tested on Linux against a fake powershell.
package hyperv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
	"github.com/sandboxforge/sbf/internal/clock"
)

// Name is the driver name in specs.
const Name = "hyperv"

// Options configure the driver. Zero values pick v1's defaults.
type Options struct {
	PowerShell string // path of powershell.exe or pwsh; default: found on PATH
	HostOS     string // runtime.GOOS spelling
	HostArch   string // runtime.GOARCH spelling
	Getenv     func(string) string
	Clock      clock.Clock // boot waits and command durations
	Debug      func(format string, args ...any)

	Switch      string        // HYPERV_SWITCH_NAME, default "Default Switch"
	BaseVHDX    string        // HYPERV_BASE_VHDX: the parent of every instance's disk
	StorageDir  string        // HYPERV_STORAGE_DIR, default <StateDir>/hyperv
	StateDir    string        // sbf's host-wide state folder
	SSHUser     string        // HYPERV_SSH_USER, default "ubuntu"
	SSHKey      string        // HYPERV_SSH_KEY_PATH, default ~/.ssh/id_ed25519, id_ecdsa or id_rsa
	SSHPort     string        // HYPERV_SSH_PORT, default "22"
	BootTimeout time.Duration // HYPERV_BOOT_TIMEOUT_SECONDS, default 180 s

	// CommandTimeout bounds each PowerShell run; zero: per operation.
	CommandTimeout time.Duration
	// PollInterval is how often a boot is checked; default 2 s.
	PollInterval time.Duration
}

// Driver is a Hyper-V backend.
type Driver struct {
	opts       Options
	powershell string
	probe      probe
	// Pool runs commands, copies and terminals over one kept-open SSH
	// connection per running instance; its methods are the driver's.
	*sshexec.Pool
}

// New checks that Hyper-V can be driven here and returns the driver, or
// an *drivers.UnavailableError saying why not and what to do. A missing
// base image or SSH key does not stop it: listing and deleting VMs (an
// expired lease) need neither, so Create and Exec report those.
func New(ctx context.Context, o Options) (*Driver, error) {
	d := newDriver(o)
	if err := d.checkHost(); err != nil {
		return nil, err
	}
	if err := d.findPowerShell(); err != nil {
		return nil, err
	}
	if err := d.runProbe(ctx); err != nil {
		return nil, err
	}
	if err := d.checkHyperV(); err != nil {
		return nil, err
	}
	return d, nil
}

// newDriver fills in the defaults without checking anything.
func newDriver(o Options) *Driver {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Debug == nil {
		o.Debug = func(string, ...any) {}
	}
	if o.Switch == "" {
		o.Switch = "Default Switch"
	}
	if o.StorageDir == "" && o.StateDir != "" {
		o.StorageDir = filepath.Join(o.StateDir, "hyperv")
	}
	if o.SSHUser == "" {
		o.SSHUser = "ubuntu"
	}
	if o.SSHPort == "" {
		o.SSHPort = "22"
	}
	if o.SSHKey == "" {
		o.SSHKey = defaultKey(o)
	}
	if o.BootTimeout == 0 {
		o.BootTimeout = 180 * time.Second
	}
	if o.PollInterval == 0 {
		o.PollInterval = 2 * time.Second
	}
	d := &Driver{opts: o}
	d.Pool = sshexec.New(sshexec.Options{Target: d.sshTarget, Clock: o.Clock})
	return d
}

// defaultKey is the first of the keys ssh itself would try that exists;
// with none, the first one names what is missing.
func defaultKey(o Options) string {
	home := o.Getenv("USERPROFILE")
	if home == "" || o.HostOS != "windows" {
		home = o.Getenv("HOME")
	}
	if home == "" {
		return ""
	}
	names := []string{"id_ed25519", "id_ecdsa", "id_rsa"}
	for _, n := range names {
		if p := filepath.Join(home, ".ssh", n); fileExists(p) {
			return p
		}
	}
	return filepath.Join(home, ".ssh", names[0])
}

func fileExists(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular()
}

func unavailable(cause, reason string, steps ...string) *drivers.UnavailableError {
	return &drivers.UnavailableError{Driver: Name, Reason: reason, ProbableCause: cause, NextSteps: steps}
}

// diskPath is where sbf keeps an instance's differencing disk. The
// separator follows the folder's own, so the path is a Windows one on
// Windows and the same string wherever the driver's tests run.
func (d *Driver) diskPath(instance string) string {
	dir := d.opts.StorageDir
	sep := "/"
	if strings.Contains(dir, `\`) {
		sep = `\`
	}
	return strings.TrimRight(dir, `\/`) + sep + instance + ".vhdx"
}
