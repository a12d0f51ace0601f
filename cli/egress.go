package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/egress"
)

// The egress commands are started by sbf itself, never typed: the Lima
// driver's QEMU wrapper runs egress-qemu in place of QEMU, which starts a
// VM's egress-proxy and has QEMU run egress-relay for each guest connection
// (docs/egress.md).
func (a *app) egressCommands() []*cobra.Command {
	return []*cobra.Command{{
		Use:    "egress-qemu LAUNCH_CONFIG QEMU [ARG…]",
		Short:  "Start a VM's egress proxy, restrict QEMU's user network and exec QEMU",
		Hidden: true, DisableFlagParsing: true,
		Args: args(cobra.MinimumNArgs(2)),
		RunE: func(_ *cobra.Command, list []string) error {
			c, err := egress.ReadLaunchConfig(list[0])
			if err != nil {
				return err
			}
			argv, err := egress.Launch(c, list[2:], egress.LaunchDeps{PID: os.Getpid()})
			if err != nil {
				return fmt.Errorf("sbf egress: %w", err)
			}
			qemu, err := exec.LookPath(list[1])
			if err != nil {
				return err
			}
			return syscall.Exec(qemu, append([]string{list[1]}, argv...), os.Environ())
		},
	}, {
		Use:    "egress-proxy PROXY_CONFIG",
		Short:  "Serve one VM's egress proxy until its QEMU exits",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, list []string) error {
			cfg, err := egress.LoadProcessConfig(list[0])
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return egress.RunProcess(ctx, cfg, egress.ProcessDeps{})
		},
	}, {
		Use:    "egress-relay PROXY_ADDR",
		Short:  "Connect one guest connection (stdin/stdout, from QEMU's guestfwd) to the VM's egress proxy",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, list []string) error {
			return egress.RelayStdio(context.Background(), list[0])
		},
	}}
}
