package hyperv

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

func init() {
	drivers.Register(drivers.Registration{
		Name: Name,
		Zero: (*Driver)(nil),
		// v1's Hyper-V VMs; it lists only the VMs its Notes marker names as sbf's, so v1's stay
		// invisible to it until it can list every name.
		V1: drivers.V1Import{Backends: []string{"hyperv"}},
		// "auto" is Hyper-V on Windows, ahead of Lima.
		AutoRank: func(os, _ string) int {
			if os == "windows" {
				return 2
			}
			return 0
		},
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

// optionsFrom reads v1's HYPERV_* variables (same names, same defaults;
// the storage folder moves from v1's ./state/hyperv to sbf's state
// folder) and SBF_HYPERV_POWERSHELL. Unlike v1, a malformed number is an
// error naming the variable rather than a crash.
func optionsFrom(env drivers.Env) (Options, error) {
	o := Options{PowerShell: env.Getenv("SBF_HYPERV_POWERSHELL"), HostOS: env.HostOS, HostArch: env.HostArch,
		Getenv: env.Getenv, Clock: env.Clock, Debug: env.Debug, StateDir: env.StateDir,
		Switch: env.Getenv("HYPERV_SWITCH_NAME"), BaseVHDX: env.Getenv("HYPERV_BASE_VHDX"),
		StorageDir: env.Getenv("HYPERV_STORAGE_DIR"), SSHUser: env.Getenv("HYPERV_SSH_USER"),
		SSHKey: env.Getenv("HYPERV_SSH_KEY_PATH")}
	if v := env.Getenv("HYPERV_SSH_PORT"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
			return Options{}, fmt.Errorf("HYPERV_SSH_PORT=%q: want a port number from 1 to 65535", v)
		}
		o.SSHPort = v
	}
	if v := env.Getenv("HYPERV_BOOT_TIMEOUT_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return Options{}, fmt.Errorf("HYPERV_BOOT_TIMEOUT_SECONDS=%q: want a positive number of seconds", v)
		}
		o.BootTimeout = time.Duration(max(n, 10)) * time.Second // v1's floor
	}
	return o, nil
}
