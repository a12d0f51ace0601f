// Package vz drives Apple's Virtualization.framework directly on macOS
// (github.com/Code-Hex/vz/v3): each instance is a folder (internal/layout)
// holding a cloned raw root disk, a kernel and initrd for direct Linux
// boot, a cloud-init NoCloud seed (drivers/cloudinit) and an SSH key; a
// supervisor process per instance (`sbf vz-run DIR`, package supervisor)
// owns the VM, because a VM lives only as long as the process that
// created it. This package makes and removes the folders, starts
// supervisors and talks to them over their control sockets; exec and copy
// go over SSH (sshexec) to the guest's address on the NAT network.
//
// Nothing here calls the framework (supervisor/hypervisor_darwin.go
// alone does), so it is tested on any host, and `make check-darwin`
// type-checks all of vz against the framework's real API.
package vz

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
	"github.com/sandboxforge/sbf/drivers/vz/supervisor"
	"github.com/sandboxforge/sbf/images"
	"github.com/sandboxforge/sbf/internal/clock"
)

// Name is the driver name in specs.
const Name = "vz"

// Options configure the driver. Zero values pick the defaults.
type Options struct {
	// Dir holds one folder per instance; default $SBF_VZ_HOME, else
	// <sbf's state folder>/vz, else ~/.sandboxforge/vz.
	Dir      string
	HostOS   string // runtime.GOOS spelling
	HostArch string // runtime.GOARCH spelling
	Getenv   func(string) string
	Clock    clock.Clock
	Debug    func(format string, args ...any)
	// StartSupervisor starts, detached from this process, a process that
	// calls supervisor.Run on the instance folder dir, and returns once
	// that process is started (not once the VM runs). sbf's is
	// CommandStarter(sbf's own path, "vz-run"): `sbf vz-run DIR`. Required.
	StartSupervisor func(dir string) error
	// Image finds an sbf image ([vm.image] location = "sbf:NAME") built
	// for arch; default: this user's image cache, then the host's.
	Image func(name, arch string) (images.Image, error)
	// Recipes are the sbf images there are; default sbf's own, or those
	// of $SBF_IMAGE_RECIPES.
	Recipes func() (map[string]images.Recipe, error)
	// Leases is macOS's DHCP lease file, where the guest's address on the
	// NAT network is found by its MAC; default /var/db/dhcpd_leases.
	Leases  string
	SSHPort string // the guest's sshd; default "22"
	// StartTimeout bounds a boot until SSH answers; default 5m
	// (SBF_VZ_START_TIMEOUT).
	StartTimeout time.Duration
	// StopTimeout is how long a clean stop may take before the VM is
	// stopped by force; default 30s.
	StopTimeout time.Duration

	// Test hooks: a stand-in for key generation (to use a test server's
	// key), the command that says a booted guest is ready, and what
	// sbf doctor asks macOS.
	keygen       func(path, comment string) (string, error)
	ready        string
	osVersion    func() (string, error)
	entitlements func() (string, error)
}

// readyCommand succeeds once cloud-init has finished its first boot (the
// user, its key and its groups exist).
const readyCommand = "test -e /var/lib/cloud/instance/boot-finished"

// Driver is the vz backend.
type Driver struct {
	opts Options
	// Pool runs commands, copies and terminals over one kept-open SSH
	// connection per running instance; its methods are the driver's.
	*sshexec.Pool
}

// New returns the driver; whether the framework can run here is the
// registration's question (see available), so tests build it anywhere.
func New(o Options) (*Driver, error) {
	if o.StartSupervisor == nil {
		return nil, errors.New("vz: no way to start a supervisor (Options.StartSupervisor)")
	}
	d := newDriver(o)
	d.Pool = sshexec.New(sshexec.Options{Target: d.sshTarget, Clock: o.Clock})
	return d, nil
}

// newDriver fills in the defaults without checking anything.
func newDriver(o Options) *Driver {
	d := &Driver{opts: withDefaults(o)}
	if d.opts.Image == nil {
		d.opts.Image = d.cachedImage(os.Geteuid())
	}
	return d
}

func withDefaults(o Options) Options {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Debug == nil {
		o.Debug = func(string, ...any) {}
	}
	if o.Dir == "" {
		o.Dir = defaultDir(o.Getenv, "")
	}
	if o.Recipes == nil {
		o.Recipes = builtRecipes(o.Getenv)
	}
	if o.Leases == "" {
		o.Leases = "/var/db/dhcpd_leases"
	}
	if o.SSHPort == "" {
		o.SSHPort = "22"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 5 * time.Minute
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = supervisor.DefaultStopTimeout
	}
	if o.keygen == nil {
		o.keygen = newKey
	}
	if o.ready == "" {
		o.ready = readyCommand
	}
	if o.osVersion == nil {
		o.osVersion = productVersion
	}
	if o.entitlements == nil {
		o.entitlements = codesignEntitlements
	}
	return o
}

// defaultDir is where instance folders live when Options.Dir is empty.
func defaultDir(getenv func(string) string, stateDir string) string {
	if d := getenv("SBF_VZ_HOME"); d != "" {
		return d
	}
	if stateDir != "" {
		return filepath.Join(stateDir, "vz")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".sandboxforge", "vz")
	}
	return filepath.Join(os.TempDir(), "sandboxforge-vz")
}

func (d *Driver) folder(instance string) layout.Folder {
	return layout.Folder{Base: d.opts.Dir, Name: instance}
}

// Dir is the folder that holds the instances.
func (d *Driver) Dir() string { return d.opts.Dir }

// frameworkMissing says why this build cannot boot machines, "" when it
// can; a variable, so tests can pretend a Mac with the framework.
var frameworkMissing = supervisor.Unavailable()

func unavailable(cause, reason string, steps ...string) *drivers.UnavailableError {
	return &drivers.UnavailableError{Driver: Name, Reason: reason, ProbableCause: cause, NextSteps: steps}
}
