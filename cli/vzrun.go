package cli

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers/vz"
)

// vzRunCommand supervises one vz instance: its VM lives in this process,
// which the vz driver starts detached (vz.CommandStarter) and stops
// through the instance's control socket.
func (a *app) vzRunCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "vz-run INSTANCE_DIR",
		Short:  "Run one vz VM until it powers off or is stopped (started by the vz driver itself)",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, list []string) error {
			ctx, stop := signal.NotifyContext(a.context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return vz.RunSupervisor(ctx, list[0])
		},
	}
}
