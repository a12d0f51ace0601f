package cli

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/egress/hostguard"
	"github.com/sandboxforge/sbf/internal/clock"
)

// egress-qemu installs the host guard on the thread that then execs QEMU;
// where Yama limits who may read a process's memory, the guard's
// supervisor keeps that right across the exec only when the exec happens on
// the main thread (hostguard.Exec). Locking in init is what puts main, and
// so the command, on the main thread.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "egress-qemu" {
		runtime.LockOSThread()
	}
}

// The egress commands are started by sbf itself, never typed: the Lima
// driver's QEMU wrapper runs egress-qemu in place of QEMU, which starts the
// VM's host guard and (allowlist) its egress-proxy, and has QEMU run
// egress-relay for each guest connection to the proxy (docs/egress.md).
func (a *app) egressCommands() []*cobra.Command {
	return []*cobra.Command{{
		Use:    "egress-qemu LAUNCH_CONFIG QEMU [ARG…]",
		Short:  "Start a VM's host guard and egress proxy, restrict QEMU's user network and exec QEMU",
		Hidden: true, DisableFlagParsing: true,
		Args: args(cobra.MinimumNArgs(2)),
		RunE: func(_ *cobra.Command, list []string) error { return egressQEMU(list[0], list[1], list[2:]) },
	}, {
		Use:    "egress-guard CONFIG",
		Short:  "Judge a guarded QEMU's connections to this host until it exits",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, list []string) error {
			cfg, err := hostguard.ReadConfig(list[0])
			if err != nil {
				return err
			}
			return hostguard.Supervise(cfg, clock.Real{})
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
			ctx, stop := signal.NotifyContext(a.context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return egress.RunProcess(ctx, cfg, egress.ProcessDeps{})
		},
	}, relayCommand()}
}

func relayCommand() *cobra.Command {
	var slots egress.RelaySlots
	var guardPID string
	cmd := &cobra.Command{
		Use:    "egress-relay PROXY_ADDR",
		Short:  "Hand one guest connection (stdin/stdout, from QEMU's guestfwd) to the VM's egress proxy",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, list []string) error {
			egress.LetGuardRead(guardPID)
			// Its stderr is the guest's connection: a failure only ends it.
			if err := egress.RelayStdio(cmd.Context(), list[0], slots); err != nil {
				return silentExit(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&slots.Dir, "slots", "", "`DIR` of the VM's relay slot files")
	cmd.Flags().IntVar(&slots.Max, "max", 0, "most relays of the VM at once (0: no bound)")
	cmd.Flags().StringVar(&guardPID, "guard-pid", "", "the VM's host guard's PID `FILE`")
	return cmd
}

// egressQEMU is `sbf egress-qemu`: the VM's network as its launch config
// says, then QEMU itself under the host guard.
func egressQEMU(config, qemu string, qemuArgs []string) error {
	c, err := egress.ReadLaunchConfig(config)
	if err != nil {
		return err
	}
	launched, err := egress.Launch(c, qemuArgs, egress.LaunchDeps{PID: os.Getpid()})
	if err != nil {
		return fmt.Errorf("sbf egress: %w", err)
	}
	path, err := exec.LookPath(qemu)
	if err != nil {
		return err
	}
	argv := append([]string{qemu}, launched.Argv...)
	if egress.IsQuery(qemuArgs) {
		return syscall.Exec(path, argv, os.Environ()) // starts no guest
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("sbf egress: finding sbf for the host guard: %w", err)
	}
	stderr, err := os.OpenFile(filepath.Join(c.Dir, "guard.stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("sbf egress: starting the host guard: %w", err)
	}
	rules := hostguard.Rules{Ports: c.GuestHostPorts}
	if ap, err := netip.ParseAddrPort(launched.ProxyAddr); err == nil {
		rules.Endpoints = append(rules.Endpoints, ap) // a proxy on loopback TCP (socket path too long)
	}
	err = hostguard.Exec(hostguard.Launch{Path: path, Argv: argv, Env: os.Environ(),
		Supervisor: []string{self, "egress-guard"}, ConfigPath: filepath.Join(c.Dir, "guard.json"),
		Stderr: stderr, Config: hostguard.Config{Sandbox: c.Sandbox, Rules: rules, AgentPID: limaHostAgent(),
			LogPath: filepath.Join(c.Dir, egress.GuardLogName), PIDFile: filepath.Join(c.Dir, egress.GuardPIDFile)}})
	return fmt.Errorf("sbf egress: %w", err)
}

// limaHostAgent is the PID of the process that started this one (the
// wrapper execs it) when that is Lima's host agent, else 0.
func limaHostAgent() int {
	ppid := os.Getppid()
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/cmdline")
	if err != nil {
		return 0
	}
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if arg == "hostagent" {
			return ppid
		}
	}
	return 0
}
