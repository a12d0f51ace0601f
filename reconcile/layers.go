package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Actions on what runs inside a VM, in the order a sandbox needs them.
const (
	Runtime  Kind = "runtime"  // Docker and Compose usable in the guest
	Services Kind = "services" // the generated MySQL/Redis project, up and answering
	Env      Kind = "env"      // connection variables upserted into the workspace's .env files
	Compose  Kind = "compose"  // the app's compose project up
)

// Layers is what a sandbox wants inside its VM. Values are resolved on
// the host (compose files loaded, secrets expanded) before any planning.
type Layers struct {
	Install    bool                           // [docker] install_if_missing
	Services   *guest.Project                 // nil: no services
	Containers map[string]string              // service → container name
	Started    map[string]state.ServiceRecord // service → what it runs (for the record)
	Network    string                         // the services' network, "" without services
	Compose    *guest.Project                 // nil: no compose stack
	Env        map[string]map[string]string   // host file → connection variables (secret)
	// EnvWriter confines the env files to the workspace, never onto a
	// protected path and never through a link.
	EnvWriter hostpath.Policy
	EnvGuard  hostpath.Guard
}

// LayerEnv is what resolving layers needs from the process.
type LayerEnv struct {
	Getenv  func(string) string // nil: an empty environment
	Environ []string
}

func (e LayerEnv) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// CheckLayers loads every sandbox's compose files and services the way
// apply would, reporting problems without touching any VM.
func CheckLayers(ctx context.Context, r *spec.Resolved, env LayerEnv) error {
	_, err := resolveLayers(ctx, r, DesiredFrom(r), env)
	return err
}

// resolveLayers loads every sandbox's compose project and services on the
// host. A broken compose file stops here, before any VM is touched.
func resolveLayers(ctx context.Context, r *spec.Resolved, d Desired, env LayerEnv) (map[string]*Layers, error) {
	out := map[string]*Layers{}
	envOwners := map[string]string{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(r.Config.Sandboxes)) {
		sb := r.Config.Sandboxes[name]
		if !sb.Compose && len(sb.Services) == 0 && !sb.Runtime {
			continue
		}
		l, err := sandboxLayers(ctx, r, name, sb, env)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for file := range l.Env {
			if other, taken := envOwners[file]; taken {
				errs = append(errs, fmt.Errorf("sandboxes %s and %s both write connection variables to %s; "+
					"put {sandbox} in [infra.mysql]/[infra.redis] inject_env_to to give each its own file", other, name, file))
			}
			envOwners[file] = name
		}
		out[name] = l
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func sandboxLayers(ctx context.Context, r *spec.Resolved, name string, sb spec.Sandbox, env LayerEnv) (*Layers, error) {
	infra := r.Config.Infra
	l := &Layers{Install: r.Config.Docker.InstallIfMissing, Env: map[string]map[string]string{},
		EnvWriter: hostpath.Policy{Roots: []string{r.Root}}, EnvGuard: hostpath.Guard{Protect: r.Config.Sync.Protect}}
	conn, err := guest.ConnectionEnv(infra, name, sb.Services, env.getenv)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", name, err)
	}
	network := ""
	if len(sb.Services) > 0 {
		if l.Services, err = guest.ServicesProject(infra, name, sb.Services, env.getenv); err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", name, err)
		}
		l.Containers, l.Started = map[string]string{}, map[string]state.ServiceRecord{}
		for _, svc := range sb.Services {
			if svc == "mysql" {
				l.Containers[svc] = guest.MySQLContainer(infra, name)
				l.Started[svc] = state.ServiceRecord{Container: l.Containers[svc], Image: infra.MySQL.Image, Port: 3306}
				addEnv(l.Env, r.Root, infra.MySQL.InjectEnvTo, name, conn, "DB_", "MYSQL_", "DATABASE_URL")
			} else {
				l.Containers[svc] = guest.RedisContainer(infra, name)
				l.Started[svc] = state.ServiceRecord{Container: l.Containers[svc], Image: infra.Redis.Image, Port: 6379}
				addEnv(l.Env, r.Root, infra.Redis.InjectEnvTo, name, conn, "REDIS_")
			}
		}
		network = guest.NetworkName(infra, name)
		l.Network = network
	}
	if sb.Compose {
		l.Compose, err = guest.LoadProject(ctx, guest.LoadOptions{Root: r.Root, Compose: r.Config.Compose, Sandbox: name,
			Env: conn, Environ: env.Environ, Network: network})
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// addEnv assigns the variables with the given prefixes to the file they
// are injected into ({sandbox} in the path names the sandbox).
func addEnv(into map[string]map[string]string, root, target, sandbox string, conn map[string]string, prefixes ...string) {
	if target == "" {
		return
	}
	path := strings.ReplaceAll(target, "{sandbox}", sandbox)
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	if into[path] == nil {
		into[path] = map[string]string{}
	}
	for k, v := range conn {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				into[path][k] = v
			}
		}
	}
}

// GuestObserved is what one running sandbox's guest reports.
type GuestObserved struct {
	Docker   string              // docker command prefix; "" when the runtime is not ready
	Verdict  string              // the runtime probe's answer
	Services *guest.ProjectState // nil when not observed
	Compose  *guest.ProjectState
	Err      string // why the guest could not be observed
}

// observeGuests looks inside each running sandbox that wants layers (and
// still holds its lease, and is among the targets), and at the host .env
// files. It changes nothing.
func observeGuests(ctx context.Context, d Desired, obs Observed, now time.Time, targets []string,
	runner func(driver, instance string) (guest.Runner, error)) (map[string]*GuestObserved, map[string]bool) {
	guests := map[string]*GuestObserved{}
	envOK := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(d.Sandboxes)) {
		ds := d.Sandboxes[name]
		if ds.Layers == nil || ds.Lease == nil || !now.Before(ds.Lease.ExpiresAt) ||
			len(targets) > 0 && !slices.Contains(targets, name) {
			continue
		}
		for file, vars := range ds.Layers.Env {
			envOK[file] = envUpToDate(file, vars)
		}
		inst, ok := obs.Instances[ds.Instance]
		if !ok || inst.Status != drivers.Running || inst.Driver != ds.Driver {
			continue
		}
		g := &GuestObserved{}
		guests[name] = g
		r, err := runner(ds.Driver, ds.Instance)
		if err != nil {
			g.Err = err.Error()
			continue
		}
		if g.Docker, g.Verdict, err = guest.ProbeRuntime(ctx, r); err != nil {
			g.Err = err.Error()
			continue
		}
		if g.Docker == "" {
			continue
		}
		if p := ds.Layers.Services; p != nil {
			if s, err := guest.ObserveProject(ctx, r, g.Docker, p.Name); err == nil {
				g.Services = &s
			}
		}
		if p := ds.Layers.Compose; p != nil {
			if s, err := guest.ObserveProject(ctx, r, g.Docker, p.Name); err == nil {
				g.Compose = &s
			}
		}
	}
	return guests, envOK
}

// planLayers adds a sandbox's in-guest steps after its VM step (vm is the
// VM action's kind, "" when the VM is already as desired).
func planLayers(p *Plan, base Action, ds DesiredSandbox, applied map[string]string, g *GuestObserved, envOK map[string]bool, vm Kind) {
	l := ds.Layers
	if l == nil {
		return
	}
	add := func(k Kind, cause string) {
		a := base
		a.Kind, a.Cause, a.Spec, a.OldDriver, a.WasRunning, a.Drift = k, cause, nil, "", false, false
		if g != nil {
			a.Docker = g.Docker
		}
		p.Actions = append(p.Actions, a)
	}
	fresh := vm == Create || vm == Replace || vm == Adopt
	guestCause := func() string {
		switch {
		case vm == Adopt:
			return "adopted VM"
		case fresh:
			return "new VM"
		case vm != "":
			return "VM restarted"
		case g == nil:
			return "guest not observed"
		case g.Err != "":
			return "guest unreachable: " + g.Err
		}
		return "runtime not ready (" + g.Verdict + ")"
	}
	runtimeReady := !fresh && vm == "" && g != nil && g.Docker != ""
	// A spare whose pool made the runtime ready needs no runtime step; the
	// adopt records its docker command (base.Docker).
	warmRuntime := vm == Adopt && base.Docker != ""
	if !runtimeReady && !warmRuntime {
		add(Runtime, guestCause())
	} else if runtimeReady && applied["docker_command"] != g.Docker {
		p.Refresh = append(p.Refresh, Refresh{Sandbox: base.Sandbox, Phase: state.Running, Instance: base.Instance,
			Driver: base.Driver, Docker: g.Docker, Note: "the container runtime is ready in the guest (" + g.Docker + "); recorded"})
	}
	if l.Services != nil {
		planProject(add, Services, l.Services, applied, "services.", runtimeReady, g, func(g *GuestObserved) *guest.ProjectState { return g.Services }, guestCause)
	}
	for _, file := range slices.Sorted(maps.Keys(l.Env)) {
		if !envOK[file] {
			add(Env, "connection variables differ in "+filepath.Base(file))
			break
		}
	}
	if l.Compose != nil {
		planProject(add, Compose, l.Compose, applied, "compose.", runtimeReady, g, func(g *GuestObserved) *guest.ProjectState { return g.Compose }, guestCause)
	}
}

func planProject(add func(Kind, string), k Kind, p *guest.Project, applied map[string]string, prefix string, ready bool,
	g *GuestObserved, state func(*GuestObserved) *guest.ProjectState, guestCause func() string) {
	if !ready || state(g) == nil {
		add(k, guestCause())
		return
	}
	recorded := map[string]string{}
	for key, h := range applied {
		if svc, ok := strings.CutPrefix(key, prefix); ok {
			recorded[svc] = h
		}
	}
	if drift := p.Drift(*state(g), recorded); len(drift) > 0 {
		add(k, strings.Join(drift, ", "))
	}
}

// envUpToDate reports whether a host .env file already holds the values;
// a link there never does (the env step refuses to write through it).
func envUpToDate(file string, vars map[string]string) bool {
	if info, err := os.Lstat(file); err != nil || info.Mode()&os.ModeSymlink != 0 {
		return false
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	return bytes.Equal(guest.UpsertEnv(data, vars), data)
}
