package lima

import (
	"context"

	"github.com/sandboxforge/sbf/drivers"
)

func init() {
	drivers.Register(drivers.Registration{
		Name: Name,
		Zero: (*Driver)(nil),
		// v1 ran its VMs with limactl too: they are Lima instances under v1's names.
		V1: drivers.V1Import{Backends: []string{"lima"}, VMTypes: []string{"qemu", "vz", "wsl2"}},
		// "auto" is Lima wherever no backend ranks higher (Hyper-V on Windows).
		AutoRank: func(string, string) int { return 1 },
		VMType:   naturalVMType,
		New: func(ctx context.Context, env drivers.Env) (drivers.Driver, error) {
			o, err := optionsFrom(env)
			if err != nil {
				return nil, err
			}
			return New(ctx, o)
		},
		Diagnose: drivers.DiagnoseWith(Name, optionsFrom, Diagnose),
	})
}

// optionsFrom reads the driver's settings from sbf's environment:
// SBF_LIMACTL (limactl's path) and SBF_LIMA_START_TIMEOUT (how long a boot
// may take).
func optionsFrom(env drivers.Env) (Options, error) {
	timeout, err := env.Duration("SBF_LIMA_START_TIMEOUT", "20m")
	if err != nil {
		return Options{}, err
	}
	return Options{Limactl: env.Getenv("SBF_LIMACTL"), StartTimeout: timeout, HostOS: env.HostOS, HostArch: env.HostArch,
		Getenv: env.Getenv, Debug: env.Debug, Clock: env.Clock, StateDir: env.StateDir, SourceTree: sbfSourceTree(),
		GuestHostPorts: env.GuestHostPorts}, nil
}

// naturalVMType is Lima's own vmType for a host: vz on macOS, qemu on
// Linux, none elsewhere.
func naturalVMType(os, _ string) string {
	switch os {
	case "darwin":
		return "vz"
	case "linux":
		return "qemu"
	}
	return ""
}
