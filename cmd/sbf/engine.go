package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/lima"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
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
	return &reconcile.Engine{
		Clock:       c,
		Drivers:     a.driverFactory(c),
		HostDir:     a.hostDir(),
		Parallelism: f.parallelism,
		LockTimeout: f.lockTimeout,
		Who:         flock.Holder{Command: "sbf " + command, PID: os.Getpid()},
		Events:      newProgress(a.stderr, 30*time.Second).event,
		Env:         a.layerEnv(),
	}, nil
}

// driverFactory builds each backend once per process.
func (a *app) driverFactory(c clock.Clock) reconcile.DriverFactory {
	var mu sync.Mutex
	cache := map[string]reconcile.Driver{}
	return func(name string, r *spec.Resolved) (reconcile.Driver, error) {
		key := name
		if name == sim.Name {
			key = name + "\x00" + a.simDir(r.Root)
		}
		mu.Lock()
		defer mu.Unlock()
		if d, ok := cache[key]; ok {
			return d, nil
		}
		d, err := a.newDriver(name, r, c)
		if err != nil {
			return nil, err
		}
		cache[key] = d
		return d, nil
	}
}

func (a *app) newDriver(name string, r *spec.Resolved, c clock.Clock) (reconcile.Driver, error) {
	switch name {
	case sim.Name:
		return sim.New(sim.Options{Dir: a.simDir(r.Root), Latency: a.getenv("SBF_SIM_LATENCY"),
			Faults: a.getenv("SBF_SIM_FAULTS"), Clock: c})
	case lima.Name:
		o, err := a.limaOptions(c)
		if err != nil {
			return nil, err
		}
		return lima.New(context.Background(), o)
	}
	return nil, &drivers.UnavailableError{Driver: name, Reason: "this build of sbf has no " + name + " driver",
		ProbableCause: "backend_unavailable", NextSteps: []string{"use a build of sbf that includes the " + name + " driver"}}
}

func (a *app) limaOptions(c clock.Clock) (lima.Options, error) {
	timeout, err := a.durationEnv("SBF_LIMA_START_TIMEOUT")
	if err != nil {
		return lima.Options{}, err
	}
	return lima.Options{
		Limactl: a.getenv("SBF_LIMACTL"), StartTimeout: timeout, HostOS: runtime.GOOS, HostArch: runtime.GOARCH,
		Getenv: a.getenv, Debug: a.debugf, Clock: c, StateDir: a.hostDir(),
	}, nil
}

// layerEnv is the environment secrets (${VAR}) and, when a workspace asks
// for it, compose interpolation read.
func (a *app) layerEnv() reconcile.LayerEnv {
	return reconcile.LayerEnv{Getenv: a.getenv, Environ: os.Environ()}
}

// durationEnv reads an optional Go duration from the environment.
func (a *app) durationEnv(name string) (time.Duration, error) {
	v := a.getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 20m", name, v)
	}
	return d, nil
}

// debugf prints driver diagnostics when SBF_DEBUG is set.
func (a *app) debugf(format string, args ...any) {
	if a.getenv("SBF_DEBUG") != "" {
		fmt.Fprintf(a.stderr, "sbf debug: "+format+"\n", args...)
	}
}

// simDir is the simulated world: $SBF_SIM_DIR, else the workspace's
// .sandboxforge/sim.
func (a *app) simDir(root string) string {
	if d := a.getenv("SBF_SIM_DIR"); d != "" {
		return d
	}
	return filepath.Join(root, spec.Dir, "sim")
}
