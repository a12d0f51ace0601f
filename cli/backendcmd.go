package cli

import (
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
)

// backendCommand marks a command a backend offers (its annotation's value
// is the command's name).
const backendCommand = "sbf/backend-command"

// backendCommands are the hidden subcommands the linked backends run in
// processes of their own (drivers.Command), such as a VM's supervisor that
// the backend starts detached with this same binary. Each hears SIGINT and
// SIGTERM itself, as a cancelled context.
func (a *app) backendCommands() []*cobra.Command {
	var out []*cobra.Command
	for _, c := range drivers.Commands() {
		out = append(out, &cobra.Command{
			Use:         strings.TrimSpace(c.Name + " " + c.Usage),
			Short:       c.Short,
			Hidden:      true,
			Args:        args(cobra.ExactArgs(c.Args)),
			Annotations: map[string]string{backendCommand: c.Name},
			RunE: func(_ *cobra.Command, list []string) error {
				ctx, stop := signal.NotifyContext(a.context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return c.Run(ctx, list)
			},
		})
	}
	return out
}
