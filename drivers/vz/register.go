package vz

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// The driver is registered on every OS, so a committed spec that says
// driver = "vz" validates everywhere; off macOS (or in a build without
// cgo) New says why it cannot run and what to do instead.
func init() {
	drivers.Register(drivers.Registration{
		Name: Name,
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
		Diagnose: func(ctx context.Context, env drivers.Env, specs []drivers.Spec) drivers.Diagnosis {
			o, err := optionsFrom(env)
			if err != nil {
				d := drivers.Diagnosis{Driver: Name, Summary: "cannot run VMs here yet: see the failed checks"}
				d.Add(drivers.CheckFromError("settings", err))
				d.Finish()
				return d
			}
			return Diagnose(ctx, o, specs)
		},
	})
}

// optionsFrom reads the driver's settings from sbf's environment:
// SBF_VZ_HOME (the instances' folder) and SBF_VZ_START_TIMEOUT (how long
// a boot may take).
func optionsFrom(env drivers.Env) (Options, error) {
	var timeout time.Duration
	if v := env.Getenv("SBF_VZ_START_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Options{}, fmt.Errorf("SBF_VZ_START_TIMEOUT=%q: want a positive duration such as 5m", v)
		}
		timeout = d
	}
	return Options{Dir: defaultDir(env.Getenv, env.StateDir), HostOS: env.HostOS, HostArch: env.HostArch, Getenv: env.Getenv,
		Clock: env.Clock, Debug: env.Debug, StartSupervisor: supervisorStarter(), StartTimeout: timeout}, nil
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
			fmt.Sprintf("the vz driver needs macOS (Apple Virtualization.framework); this host runs %s", o.HostOS), offMac...)
	}
	if framework == nil {
		return unavailable("backend_unavailable", frameworkMissing,
			"use an sbf built on macOS with cgo (CGO_ENABLED=1, the default there)", `or use the lima driver ([vm] driver = "lima")`)
	}
	if o.StartSupervisor == nil {
		return unavailable("backend_unavailable", "this sbf cannot start the vz supervisor (sbf vz-run)",
			"use an sbf whose main calls vz.SetSupervisorStarter")
	}
	return nil
}

var (
	_ drivers.Driver    = (*Driver)(nil)
	_ drivers.Execer    = (*Driver)(nil)
	_ drivers.Copier    = (*Driver)(nil)
	_ drivers.Connector = (*Driver)(nil)
)
