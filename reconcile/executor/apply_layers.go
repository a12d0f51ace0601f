package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/state"
)

// readinessTimeout bounds how long services may take to answer.
const readinessTimeout = 90 * time.Second

// guestRunner binds a driver's exec, copy and socket dialer (nil when the
// driver has none) to one instance.
type guestRunner struct {
	exec     drivers.Execer
	copy     drivers.Copier
	sockets  drivers.SocketDialer
	instance string
}

func (g guestRunner) Exec(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
	return g.exec.Exec(ctx, g.instance, req)
}

func (g guestRunner) CopyIn(ctx context.Context, local, remote string) error {
	return g.copy.CopyIn(ctx, g.instance, local, remote)
}

// DialSocket makes guestRunner a guest.SocketDialer.
func (g guestRunner) DialSocket(ctx context.Context, path string) (net.Conn, error) {
	if g.sockets == nil {
		return nil, errors.New("the driver opens no sockets in its guests")
	}
	return g.sockets.DialGuestSocket(ctx, g.instance, path)
}

// RunnerFor gives the guest layer a way into an instance, or says why the
// driver offers none.
func RunnerFor(d Driver, driverName, instance string) (guest.Runner, error) {
	caps := drivers.CapabilitiesOf(d)
	if caps.HostShell {
		return nil, fmt.Errorf("the %s driver runs commands on this host, not in a VM, so sbf does not install or run "+
			"Docker, services or compose with it (use the lima driver)", driverName)
	}
	x, c := caps.Exec, caps.CopyIn
	if x == nil || c == nil {
		return nil, fmt.Errorf(
			"the %s driver cannot run commands in its VMs, so it cannot converge a runtime, services or compose",
			driverName,
		)
	}
	return guestRunner{exec: x, copy: c, sockets: caps.DialSocket, instance: instance}, nil
}

// performLayer carries out an in-guest step. The layer values come from
// the desired state the plan was made from, not from the action, so no
// secret is ever part of a plan.
func (e *Executor) performLayer(ctx context.Context, drv Driver, a plan.Action) error {
	l := e.Layers[a.Sandbox]
	if l == nil {
		return fmt.Errorf("no in-guest layers are desired for %s", a.Sandbox)
	}
	if a.Kind == plan.Env {
		return e.writeEnv(a, l)
	}
	r, err := RunnerFor(drv, a.Driver, a.Instance)
	if err != nil {
		return err
	}
	if a.Kind == plan.Runtime {
		docker, err := guest.EnsureRuntime(ctx, r, l.Install)
		if err != nil {
			return err
		}
		return e.note(a, func(rec *state.Sandbox) {
			setApplied(rec, "docker_command", docker)
			guestOf(rec).DockerCommand = docker
		})
	}
	docker := a.Docker
	if docker == "" {
		if rec, ok := e.Record.Sandbox(a.Sandbox); ok {
			docker = rec.Applied["docker_command"]
		}
	}
	if docker == "" {
		return fmt.Errorf("the container runtime of %s is not known to be ready", a.Sandbox)
	}
	switch a.Kind {
	case plan.Services:
		containers, err := guest.ApplyProject(ctx, r, docker, l.Services)
		if err != nil {
			return err
		}
		attempts := map[string]int{}
		if !e.NoWait {
			probes := guest.ReadinessProbes(l.Containers)
			if attempts, err = guest.WaitReady(ctx, r, docker, probes, readinessTimeout, e.sleep); err != nil {
				return err
			}
		}
		return e.note(a, func(rec *state.Sandbox) {
			setProject(rec, "services.", l.Services, containers)
			g := guestOf(rec)
			g.Network, g.Services = l.Network, map[string]state.ServiceRecord{}
			for svc, started := range l.Started {
				started.Attempts, started.Ready = attempts[svc], attempts[svc] > 0
				g.Services[svc] = started
			}
		})
	case plan.Compose:
		containers, err := guest.ApplyProject(ctx, r, docker, l.Compose)
		if err != nil {
			return err
		}
		return e.note(a, func(rec *state.Sandbox) { setProject(rec, "compose.", l.Compose, containers) })
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

func (e *Executor) writeEnv(a plan.Action, l *plan.Layers) error {
	for _, file := range slices.Sorted(maps.Keys(l.Env)) {
		if err := writeEnvFile(l, file); err != nil {
			return &coded.Error{Code: "WORKSPACE_ENV_INJECTION_FAILED", Message: err.Error(),
				Details: map[string]any{"path": file}}
		}
	}
	// Only a hash of the values is recorded: state files hold no secrets.
	sum, _ := json.Marshal(l.Env)
	h := sha256.Sum256(sum)
	return e.note(a, func(rec *state.Sandbox) {
		setApplied(rec, "env", hex.EncodeToString(h[:])[:16])
		g := guestOf(rec)
		g.EnvFiles = map[string][]string{}
		for file, vars := range l.Env {
			g.EnvFiles[file] = slices.Sorted(maps.Keys(vars))
		}
	})
}

// writeEnvFile upserts one file's variables through the workspace's
// writer: inside the workspace, not protected, not through a link.
func writeEnvFile(l *plan.Layers, file string) error {
	w, err := l.EnvWriter.Writer(file, file, l.EnvGuard)
	if err != nil {
		return err
	}
	defer w.Close()
	_, err = guest.WriteEnvFile(w, file, l.Env[file])
	return err
}

func guestOf(rec *state.Sandbox) *state.GuestRecord {
	if rec.Guest == nil {
		rec.Guest = &state.GuestRecord{}
	}
	return rec.Guest
}

func setApplied(rec *state.Sandbox, key, value string) {
	if rec.Applied == nil {
		rec.Applied = map[string]string{}
	}
	rec.Applied[key] = value
}

// setProject records the per-service hashes a project was applied with,
// and its containers' config hashes as the up left them.
func setProject(rec *state.Sandbox, prefix string, p *guest.Project, containers map[string]string) {
	for k := range rec.Applied {
		if strings.HasPrefix(k, prefix) {
			delete(rec.Applied, k)
		}
	}
	for svc, h := range p.Services {
		setApplied(rec, prefix+svc, h)
	}
	g := guestOf(rec)
	byProject := maps.Clone(g.Containers) // a new map: a fork's record shares its source's
	if byProject == nil {
		byProject = map[string]map[string]string{}
	}
	byProject[p.Name] = containers
	g.Containers = byProject
}

func (e *Executor) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-e.Clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
