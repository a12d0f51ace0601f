package lima

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

func init() {
	drivers.Register(drivers.Registration{
		Name: Name,
		New: func(ctx context.Context, env drivers.Env) (drivers.Driver, error) {
			o, err := optionsFrom(env)
			if err != nil {
				return nil, err
			}
			return New(ctx, o)
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
// SBF_LIMACTL (limactl's path) and SBF_LIMA_START_TIMEOUT (how long a boot
// may take).
func optionsFrom(env drivers.Env) (Options, error) {
	var timeout time.Duration
	if v := env.Getenv("SBF_LIMA_START_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Options{}, fmt.Errorf("SBF_LIMA_START_TIMEOUT=%q: want a positive duration such as 20m", v)
		}
		timeout = d
	}
	return Options{Limactl: env.Getenv("SBF_LIMACTL"), StartTimeout: timeout, HostOS: env.HostOS, HostArch: env.HostArch,
		Getenv: env.Getenv, Debug: env.Debug, Clock: env.Clock, StateDir: env.StateDir}, nil
}

var (
	_ drivers.Driver        = (*Driver)(nil)
	_ drivers.Execer        = (*Driver)(nil)
	_ drivers.Copier        = (*Driver)(nil)
	_ drivers.Connector     = (*Driver)(nil)
	_ drivers.ArchiveCopier = (*Driver)(nil)
)
