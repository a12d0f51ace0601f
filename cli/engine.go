package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
	waits "github.com/sandboxforge/sbf/internal/progress"
	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// clock is the only clock of the process. SBF_NOW (RFC 3339) pins "now"
// for black-box tests: leases expire as if that were the time.
func (a *app) clock() (clock.Clock, error) {
	if v := a.getenv("SBF_NOW"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, fmt.Errorf("SBF_NOW=%q: want an RFC 3339 time such as 2026-11-25T12:00:00Z", v)
		}
		return clock.Fixed{T: t}, nil
	}
	return clock.Real{}, nil
}

// hostDir holds host-wide state (the instance index and the instance cap's
// lock): $SBF_STATE_HOME, else $XDG_STATE_HOME/sandboxforge, else
// ~/.local/state/sandboxforge.
func (a *app) hostDir() string {
	if d := a.getenv("SBF_STATE_HOME"); d != "" {
		return d
	}
	if d := a.getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "sandboxforge")
	}
	if h := a.getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "sandboxforge")
	}
	return filepath.Join(os.TempDir(), "sandboxforge")
}

type engineFlags struct {
	parallelism int
	lockTimeout time.Duration
}

func (a *app) engine(command string, f engineFlags) (*reconcile.Engine, error) {
	c, err := a.clock()
	if err != nil {
		return nil, err
	}
	pol, err := a.operator()
	if err != nil {
		return nil, err
	}
	backends := reconcile.OpenBackends(a.context(), a.driverEnv(c))
	a.closers = append(a.closers, backends.Close) // closed when the command ends
	return &reconcile.Engine{
		Clock:       c,
		Policy:      pol,
		Drivers:     backends.Get,
		HostDir:     a.hostDir(),
		Parallelism: f.parallelism,
		LockTimeout: f.lockTimeout,
		Who:         flock.Holder{Command: "sbf " + command, PID: os.Getpid()},
		Events:      newProgress(a.stderr, progressEvery).event,
		Env:         a.layerEnv(),
	}, nil
}

// driverEnv is what backends are built from: this process's environment,
// sbf's host-wide state folder and the operator's word on host execution.
func (a *app) driverEnv(c clock.Clock) drivers.Env {
	pol, _ := a.operator() // a policy that cannot load fails the command before any backend runs
	return drivers.Env{Getenv: a.getenv, Clock: c, StateDir: a.hostDir(), HostOS: runtime.GOOS,
		HostArch: runtime.GOARCH, Debug: a.debugf, HostExec: pol.HostExec,
		GuestWritable:    append(slices.Clone(pol.WorkspaceRoots), pol.AllowedPaths...),
		WorkspaceHolding: spec.WorkspaceHolding,
		GuestHostPorts:   pol.GuestHostPorts,
		Executable:       a.executable}
}

// layerEnv is the environment secrets (${VAR}) and, when a workspace asks
// for it, compose interpolation read.
func (a *app) layerEnv() reconcile.LayerEnv {
	return reconcile.LayerEnv{Getenv: a.getenv, Environ: os.Environ(), Compose: a.composeLoader()}
}

// debugf prints driver diagnostics when SBF_DEBUG is set.
func (a *app) debugf(format string, args ...any) {
	if a.getenv("SBF_DEBUG") != "" {
		fmt.Fprintf(a.stderr, "sbf debug: %s\n", termsafe.Text(fmt.Sprintf(format, args...)))
	}
}

// progressEvery is how often a long step says it is still running: as
// often as every other wait of sbf's (sbf image build, a lock held by
// another sbf) and make run's phases, so a wrapper need not add a
// heartbeat of its own.
const progressEvery = waits.Every
