package vz

import (
	"context"
	"fmt"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/vz/supervisor"
)

// The driver is registered on every OS, so a committed spec that says
// driver = "vz" validates everywhere; off macOS (or in a build without
// cgo) New says why it cannot run and what to do instead.
func init() {
	drivers.Register(drivers.Registration{
		Name: Name,
		Zero: (*Driver)(nil),
		New: func(_ context.Context, env drivers.Env) (drivers.Driver, error) {
			o, err := optionsFrom(env)
			if err != nil {
				return nil, err
			}
			if err := available(o); err != nil {
				return nil, err
			}
			return New(o)
		},
		Diagnose: drivers.DiagnoseWith(Name, optionsFrom, Diagnose),
		Commands: []drivers.Command{{Name: supervisorCommand, Usage: "INSTANCE_DIR", Args: 1,
			Short: "Run one vz VM until it powers off or is stopped (started by the vz driver itself)",
			Run:   func(ctx context.Context, args []string) error { return supervisor.Run(ctx, args[0]) }}},
	})
}

// supervisorCommand is sbf's hidden subcommand that supervises one
// instance's VM: `sbf vz-run DIR`, which CommandStarter starts detached.
const supervisorCommand = "vz-run"

// supervisorStarter starts `sbf vz-run DIR` with sbf's own program; nil
// when this process knows none (Env.Executable).
func supervisorStarter(exe string) func(dir string) error {
	if exe == "" {
		return nil
	}
	return CommandStarter(exe, supervisorCommand)
}

// optionsFrom reads the driver's settings from sbf's environment:
// SBF_VZ_HOME (the instances' folder) and SBF_VZ_START_TIMEOUT (how long
// a boot may take).
func optionsFrom(env drivers.Env) (Options, error) {
	timeout, err := env.Duration("SBF_VZ_START_TIMEOUT", "5m")
	if err != nil {
		return Options{}, err
	}
	return Options{Dir: defaultDir(env.Getenv, env.StateDir), HostOS: env.HostOS, HostArch: env.HostArch,
		Getenv: env.Getenv, Clock: env.Clock, Debug: env.Debug, StartSupervisor: supervisorStarter(env.Executable),
		StartTimeout: timeout}, nil
}

// offMac are the next steps for a host that is not a Mac.
var offMac = []string{
	`on this host, use the lima driver ([vm] driver = "lima"), or "auto"`,
	`on a Mac (macOS 12 or newer), [vm] driver = "vz" boots Linux VMs directly with Virtualization.framework`,
}

// available is what New checks first: a Mac, a build that can call the
// framework, and a way to start supervisors.
func available(o Options) error {
	if o.HostOS != "darwin" {
		return unavailable("unsupported_host_os",
			fmt.Sprintf("the vz driver needs macOS (Apple Virtualization.framework); this host runs %s", o.HostOS),
			offMac...)
	}
	if frameworkMissing != "" {
		return unavailable("backend_unavailable", frameworkMissing,
			"use an sbf built on macOS with cgo (CGO_ENABLED=1, the default there)",
			`or use the lima driver ([vm] driver = "lima")`)
	}
	if o.StartSupervisor == nil {
		return unavailable("backend_unavailable", "this sbf cannot start the vz supervisor (sbf vz-run): it "+
			"does not know its own program", "run sbf or sbf-server itself, not sbf's command line in process")
	}
	return nil
}
