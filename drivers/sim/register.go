package sim

import (
	"context"
	"path/filepath"

	"github.com/sandboxforge/sbf/drivers"
)

func init() {
	drivers.Register(drivers.Registration{
		Name:         Name,
		TestOnly:     true,
		PerWorkspace: true, // its world is the workspace's unless SBF_SIM_DIR says otherwise
		New: func(_ context.Context, env drivers.Env) (drivers.Driver, error) {
			dir := env.Getenv("SBF_SIM_DIR")
			if dir == "" {
				dir = filepath.Join(env.Workspace, ".sandboxforge", "sim")
			}
			return New(Options{Dir: dir, Latency: env.Getenv("SBF_SIM_LATENCY"), Faults: env.Getenv("SBF_SIM_FAULTS"), Clock: env.Clock})
		},
		Diagnose: func(context.Context, drivers.Env, []drivers.Spec) drivers.Diagnosis {
			return drivers.Diagnosis{Driver: Name, Usable: true, Summary: "usable (simulated VMs, for tests and demos)"}
		},
	})
}

var (
	_ drivers.Driver        = (*Driver)(nil)
	_ drivers.Execer        = (*Driver)(nil)
	_ drivers.Copier        = (*Driver)(nil)
	_ drivers.HostShell     = (*Driver)(nil)
	_ drivers.ArchiveCopier = (*Driver)(nil)
	_ drivers.Remover       = (*Driver)(nil)
	_ drivers.Labeler       = (*Driver)(nil)
)
