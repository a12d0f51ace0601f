package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// LayerEnv is what resolving layers needs from the process.
type LayerEnv struct {
	Getenv  func(string) string // nil: an empty environment
	Environ []string
	// Compose loads a sandbox's compose files: in sbf and sbf-server, in
	// sbf-server's confined compose-load child (drivers/guest/composerun);
	// tests may load in process (composefile.LoadProject). nil: this
	// process cannot.
	Compose func(context.Context, guest.LoadOptions) (*guest.Project, error)
}

func (e LayerEnv) loadCompose(ctx context.Context, o guest.LoadOptions) (*guest.Project, error) {
	if e.Compose == nil {
		return nil, errors.New("this sbf cannot load compose files (no compose loader): run it beside sbf-server")
	}
	return e.Compose(ctx, o)
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
	_, err := resolveLayers(ctx, r, func(string) bool { return true }, nil, env)
	return err
}

// leaseLive reports whether a sandbox holds a lease at now: only those keep
// a VM, so only their compose files matter to a run.
func leaseLive(d plan.Desired, now time.Time) func(string) bool {
	return func(name string) bool {
		l := d.Sandboxes[name].Lease
		return l != nil && l.ExpiresAt.After(now)
	}
}

// resolveLayers loads the compose project and services of every sandbox
// needed says will run and, when a run acts on some sandboxes only
// (targets), returns theirs alone: the others' services are still read,
// since no two sandboxes may write one env file, but their compose files
// are not loaded (a child process each, ~0.1 s on a loaded host, on every
// create in a workspace with a compose stack). A broken compose file of a
// sandbox the run acts on stops here, before any VM is touched; a sandbox
// on its way out is not held back by one.
func resolveLayers(
	ctx context.Context,
	r *spec.Resolved,
	needed func(sandbox string) bool,
	targets []string,
	env LayerEnv,
) (map[string]*plan.Layers, error) {
	out := map[string]*plan.Layers{}
	envOwners := map[string]string{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(r.Config.Sandboxes)) {
		sb := r.Config.Sandboxes[name]
		if !sb.Compose && len(sb.Services) == 0 && !sb.Runtime || !needed(name) {
			continue
		}
		acted := plan.Targeted(targets, name)
		l, err := sandboxLayers(ctx, r, name, sb, acted, env)
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
		if acted {
			out[name] = l
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func sandboxLayers(
	ctx context.Context,
	r *spec.Resolved,
	name string,
	sb spec.Sandbox,
	withCompose bool,
	env LayerEnv,
) (*plan.Layers, error) {
	infra := r.Config.Infra
	l := &plan.Layers{Install: r.Config.Docker.InstallIfMissing, Env: map[string]map[string]string{},
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
	if sb.Compose && withCompose {
		l.Compose, err = env.loadCompose(ctx, guest.LoadOptions{Root: r.Root, Compose: r.Config.Compose, Sandbox: name,
			Env: conn, Environ: env.Environ, Network: network})
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// addEnv assigns the variables with the given prefixes to the file they
// are injected into ({sandbox} in the path names the sandbox).
func addEnv(
	into map[string]map[string]string,
	root, target, sandbox string,
	conn map[string]string,
	prefixes ...string,
) {
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

// observeGuests looks inside each running sandbox that wants layers (and
// still holds its lease, and is among the targets), and at the host .env
// files. It changes nothing.
func observeGuests(ctx context.Context, d plan.Desired, obs plan.Observed, rec *state.File, now time.Time,
	targets []string, runner func(driver, instance string) (guest.Runner, error),
) (map[string]*plan.GuestObserved, map[string]bool) {
	guests := map[string]*plan.GuestObserved{}
	envOK := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(d.Sandboxes)) {
		ds := d.Sandboxes[name]
		if ds.Layers == nil || ds.Lease == nil || !now.Before(ds.Lease.ExpiresAt) ||
			len(targets) > 0 && !slices.Contains(targets, name) {
			continue
		}
		for file := range ds.Layers.Env {
			envOK[file] = envUpToDate(ds.Layers, file)
		}
		inst, ok := obs.Instances[ds.Instance]
		if !ok || inst.Status != drivers.Running || inst.Driver != ds.Driver {
			continue
		}
		g := &plan.GuestObserved{}
		guests[name] = g
		r, err := runner(ds.Driver, ds.Instance)
		if err != nil {
			g.Err = err.Error()
			continue
		}
		if observeRecorded(ctx, r, ds.Layers, rec.Sandboxes[name], g) {
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

// observeRecorded fills g from guest.ObserveRecorded when the guest still
// runs what the sandbox's last apply left there (the runtime it found
// ready, each project's containers), and says whether it did.
func observeRecorded(ctx context.Context, r guest.Runner, l *plan.Layers, rec *state.Sandbox,
	g *plan.GuestObserved) bool {
	if rec == nil || rec.Guest == nil {
		return false
	}
	docker := rec.Applied["docker_command"]
	var projects []*guest.Project
	for _, p := range []*guest.Project{l.Services, l.Compose} {
		if p != nil {
			projects = append(projects, p)
		}
	}
	states, ok := guest.ObserveRecorded(ctx, r, docker, projects, rec.Guest.Containers)
	if !ok {
		return false
	}
	g.Docker, g.Verdict = docker, "ready"
	for _, p := range projects {
		s := states[p.Name]
		if p == l.Services {
			g.Services = &s
		} else {
			g.Compose = &s
		}
	}
	return true
}

// envUpToDate reports whether a host .env file already holds the values,
// read as the env step writes it: through the workspace's writer, so a
// link there (or a folder link out above it) is never read through and
// never up to date (the env step refuses it).
func envUpToDate(l *plan.Layers, file string) bool {
	w, err := l.EnvWriter.Writer(file, file, l.EnvGuard)
	if err != nil {
		return false
	}
	defer w.Close()
	data, _, err := w.ReadFile()
	if err != nil || data == nil {
		return false
	}
	return bytes.Equal(guest.UpsertEnv(data, l.Env[file]), data)
}
