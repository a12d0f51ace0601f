package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/sandboxforge/sbf/internal/proc"

	"github.com/sandboxforge/sbf/sandbox"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/broker"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
)

// watchConnection ends the broker once the VM's connection is gone (the VM
// stopped, expired or was destroyed): nothing outlives its sandbox. A
// connection counts as seen once a check found it up or a command ran on it:
// a sandbox destroyed within one interval of its first command is never
// seen up by a check, and its broker must still end.
func watchConnection(ctx context.Context, stop func(), drv any, instance string, ran func() bool,
	every time.Duration) {
	alive, ok := drv.(drivers.Connector)
	if !ok {
		return
	}
	seen := false
	t := clock.Real{}.NewTicker(every) // a connection drops in real time, whatever SBF_NOW says
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			seen = seen || ran()
			up := alive.Alive(instance)
			if seen && !up {
				stop()
				return
			}
			seen = seen || up
		}
	}
}

// connectionCheck is how often a broker checks its VM's connection.
const connectionCheck = 5 * time.Second

// brokerIdle is how long an exec broker waits for the next command.
const brokerIdle = 10 * time.Minute

// brokerSocket is where the broker of a workspace's sandbox listens, named
// from the workspace's identity alone (so `sbf exec` finds a running one
// without reading the workspace) and the protocol's version (so a broker an
// older sbf left running is never asked in a language it does not speak).
func (a *app) brokerSocket(workspaceID, sandbox string) string {
	name := drivers.InstanceName(workspaceID, sandbox)
	return filepath.Join(a.hostDir(), "exec", fmt.Sprintf("%s.v%d.sock", name, broker.Version))
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
	dir := filepath.Dir(a.brokerSocket(tgt.Resolved.WorkspaceID, tgt.Sandbox))
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
			proc.OneP(a.getenv) // a broker's work is waiting on the guest
			return a.serveBroker(a.context(), list[0])
		},
	}
}

// serveBroker keeps sandbox name's connection for the commands of other
// sbf processes until ctx ends, the connection drops or none has come for
// brokerIdle. Another broker already serving it ends this one at once.
func (a *app) serveBroker(ctx context.Context, name string) error {
	ws, err := a.workspace(nil)
	if err != nil {
		return err
	}
	if ws, err = ws.Resolved(); err != nil {
		return err
	}
	eng, err := a.engine("exec", engineFlags{})
	if err != nil {
		return err
	}
	held, err := eng.Target(ws, name)
	if err != nil {
		return err
	}
	sock := a.brokerSocket(ws.ID, name)
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		return err
	}
	lock, err := flock.Acquire(ctx, ownfile.PathFile(sock+".lock"),
		flock.Holder{Command: "sbf exec-broker", PID: os.Getpid()}, 0)
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
	drv, err := held.Driver()
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var ran atomic.Bool
	go watchConnection(ctx, stop, drv, held.Instance, ran.Load, connectionCheck)
	find := func() (*sandbox.Target, error) { return eng.Target(ws, name) }
	serve := a.brokerExec(held, find, stop, &ran)
	return broker.Serve(ctx, ln, serve, brokerIdle, clock.Real{}) // idleness: real time
}

// brokerExec is what a broker does with each command: it finds the sandbox
// again (its clients need not have read the workspace, so the lease is
// checked here, every time), runs the command on the connection it holds
// under the server's output ceiling, and records it when its client asked.
// A sandbox now on another VM than the one held ends the broker; its
// client asks another way.
func (a *app) brokerExec(held *sandbox.Target, find func() (*sandbox.Target, error),
	stop func(), ran *atomic.Bool) func(context.Context, drivers.ExecRequest) (drivers.ExecResult, error) {
	return func(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
		now, err := find()
		if err != nil {
			return drivers.ExecResult{}, err
		}
		if now.Instance != held.Instance {
			stop()
			return drivers.ExecResult{}, fmt.Errorf("%w: sandbox %s is now VM %s, not %s",
				broker.ErrNoBroker, held.Sandbox, now.Instance, held.Instance)
		}
		start := now.Clock.Now()
		res, err := held.ExecPrepared(ctx, req)
		if err == nil {
			ran.Store(true)
		}
		if broker.Recorded(ctx) {
			a.noteExec(now, req.Command, res, start, err) // history.go
		}
		return res, err
	}
}
