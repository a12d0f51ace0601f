package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/policy"
)

func init() {
	drivers.Register(drivers.Registration{
		Name:         Name,
		TestOnly:     true,
		PerWorkspace: true, // a world per workspace unless SBF_SIM_DIR names one
		Zero:         (*Driver)(nil),
		// Its List is its whole world, so tests of sbf import-v1 see "v1's" VMs in it; what it
		// reports is the spec it was given, so any vm_type a sandbox can say.
		V1: drivers.V1Import{ListsEveryName: true, VMTypes: []string{"qemu", "vz", "wsl2"}},
		New: func(_ context.Context, env drivers.Env) (drivers.Driver, error) {
			if !env.HostExec {
				return nil, disabled()
			}
			dir := env.Getenv("SBF_SIM_DIR")
			if dir == "" {
				dir = WorldDir(env.StateDir, env.Workspace)
			}
			return New(Options{Dir: dir, Latency: env.Getenv("SBF_SIM_LATENCY"),
				Faults: env.Getenv("SBF_SIM_FAULTS"), Boot: env.Getenv("SBF_SIM_BOOT"), Clock: env.Clock,
				Tool: env.Getenv("SBF_SIM_TOOL"), Volatile: env.Getenv("SBF_SIM_VOLATILE") == "1"})
		},
		Diagnose: func(_ context.Context, env drivers.Env, _ []drivers.Spec) drivers.Diagnosis {
			if !env.HostExec {
				d := drivers.Diagnosis{Driver: Name, Summary: "disabled"}
				d.Add(drivers.CheckFromError("driver", disabled()))
				d.Finish()
				return d
			}
			return drivers.Diagnosis{Driver: Name, Usable: true, Summary: "usable (simulated VMs, for tests and demos)"}
		},
	})
}

// disabled says why the sim does not run: its "guest" commands run on this
// host, so only whoever starts sbf may allow it, never a workspace's file.
func disabled() error {
	return &drivers.UnavailableError{Driver: Name,
		Reason: "the sim driver runs sandbox commands on this host, not in a VM, so it runs only when sbf " +
			"is started with " + policy.EnableSimVar + "=1",
		ProbableCause: "host_execution_disabled",
		NextSteps: []string{"use a VM driver ([vm] driver = \"auto\" or \"lima\")",
			"for tests and demos only: start sbf with " + policy.EnableSimVar + "=1"}}
}

// WorldDir is where a workspace's simulated VMs live unless SBF_SIM_DIR
// says otherwise: a folder of sbf's host-wide state — never inside the
// workspace, where a copy of the workspace would copy the world into
// itself.
func WorldDir(stateDir, workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	if stateDir == "" {
		stateDir = filepath.Join(os.TempDir(), "sandboxforge")
	}
	return filepath.Join(stateDir, "sim", hex.EncodeToString(sum[:6]))
}
