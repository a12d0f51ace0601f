package cli

import (
	"context"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/sandboxforge/sbf/sandbox"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/broker"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
)

// watchConnection ends the broker once the VM's connection is gone (the VM
// stopped, expired or was destroyed): nothing outlives its sandbox.
func watchConnection(ctx context.Context, stop func(), drv any, instance string) {
	alive, ok := drv.(drivers.Connector)
	if !ok {
		return
	}
	seen := false
	t := clock.Real{}.NewTicker(5 * time.Second) // a connection drops in real time, whatever SBF_NOW says
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			up := alive.Alive(instance)
			if seen && !up {
				stop()
				return
			}
			seen = seen || up
		}
	}
}

// brokerIdle is how long an exec broker waits for the next command.
const brokerIdle = 10 * time.Minute

func (a *app) brokerSocket(instance string) string {
	// The protocol's version is in the name: a broker an older sbf left
	// running is never asked in a language it does not speak.
	return filepath.Join(a.hostDir(), "exec", fmt.Sprintf("%s.v%d.sock", instance, broker.Version))
}

// brokers is how `sbf exec` reaches exec brokers: sockets under the
// host state folder, brokers started as detached sbf processes.
func (a *app) brokers() sandbox.Brokers {
	if a.getenv("SBF_EXEC_BROKER") == "0" {
		return sandbox.Brokers{}
	}
	return sandbox.Brokers{Socket: a.brokerSocket, Start: a.startBroker, Debug: a.debugf}
}

// startBroker launches `sbf exec-broker` detached from this process.
func (a *app) startBroker(tgt *sandbox.Target) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir := filepath.Dir(a.brokerSocket(tgt.Instance))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(dir, tgt.Instance+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(exe, "-C", tgt.Resolved.Root, "exec-broker", tgt.Sandbox)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	proc.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

func (a *app) execBrokerCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "exec-broker NAME",
		Short:  "Keep a sandbox's connection warm for sbf exec (started by sbf exec itself)",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, list []string) error {
			if a.getenv("GOMAXPROCS") == "" {
				// A command's round trip hops across half a dozen goroutines (the client's
				// connection, the SSH connection's reader, the guest shell's two streams):
				// on one P they hand over without waking another thread. Measured on a Lima
				// VM under emulation, 6 brokers each way, 60 commands 4 ms apart: p50 4.34 →
				// 4.07 ms, p90 6.5 → 5.6 ms. A broker's work is waiting on the guest.
				runtime.GOMAXPROCS(1)
			}
			tgt, err := a.target(list)
			if err != nil {
				return err
			}
			sock := a.brokerSocket(tgt.Instance)
			if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
				return err
			}
			lock, err := flock.Acquire(
				a.context(),
				ownfile.PathFile(sock+".lock"),
				flock.Holder{Command: "sbf exec-broker", PID: os.Getpid()},
				0,
			)
			if err != nil {
				return nil // another broker serves this sandbox
			}
			defer lock.Release()
			os.Remove(sock)
			ln, err := net.Listen("unix", sock)
			if err != nil {
				return fmt.Errorf("listening on %s: %w", sock, err)
			}
			defer os.Remove(sock)
			drv, err := tgt.Driver()
			if err != nil {
				return err
			}
			ctx, stop := context.WithCancel(a.context())
			defer stop()
			go watchConnection(ctx, stop, drv, tgt.Instance)
			// The data plane's exec, under the server's ceiling whoever asks.
			return broker.Serve(ctx, ln, tgt.ExecPrepared, brokerIdle, clock.Real{}) // idleness: real time
		},
	}
}
