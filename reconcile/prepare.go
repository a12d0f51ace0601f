package reconcile

import (
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// BootstrapKeys are the layers an ad-hoc sandbox is declared with
// (SandboxForge v1's bootstrap): the container runtime always, and the
// enabled [infra] services when includeServices and [infra]
// include_services_by_default both say so. A backend that runs commands
// on this host (the sim) gets none: sbf installs nothing there.
func BootstrapKeys(r *spec.Resolved, drv Driver, includeServices bool) map[string]any {
	if drivers.CapabilitiesOf(drv).HostShell {
		return nil
	}
	keys := map[string]any{"runtime": true}
	infra := r.Config.Infra
	if includeServices && infra.IncludeServicesByDefault {
		var services []any
		if infra.MySQL.Enabled {
			services = append(services, "mysql")
		}
		if infra.Redis.Enabled {
			services = append(services, "redis")
		}
		if len(services) > 0 {
			keys["services"] = services
		}
	}
	return keys
}

// Prepared is what converging a sandbox's in-guest layers left, as the
// engine recorded it: what prepare_workspace reports.
type Prepared struct {
	RuntimeReady  bool                           `json:"runtime_ready"`
	DockerCommand string                         `json:"docker_command,omitempty"`
	Network       *Network                       `json:"network,omitempty"`
	Services      map[string]state.ServiceRecord `json:"services"`
	// ConnectionEnv holds the variables the app gets, secrets redacted.
	ConnectionEnv map[string]string `json:"connection_env"`
	EnvInjections []EnvInjection    `json:"env_injections"`
}

// Network is the services' Docker network.
type Network struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ready, or skipped without services
}

// EnvInjection is one host file that received connection variables.
type EnvInjection struct {
	Path string   `json:"path"`
	Keys []string `json:"keys"`
}

// Prepared reports a sandbox's layers after res converged it.
func (e *Engine) Prepared(res *Result, sandbox string) (Prepared, error) {
	out := Prepared{
		Services:      map[string]state.ServiceRecord{},
		ConnectionEnv: map[string]string{},
		EnvInjections: []EnvInjection{},
	}
	rec := res.recorded.Sandboxes[sandbox]
	if rec != nil && rec.Guest != nil {
		g := rec.Guest
		out.DockerCommand, out.RuntimeReady = g.DockerCommand, g.DockerCommand != ""
		if g.Network != "" {
			out.Network = &Network{Name: g.Network, Status: "ready"}
		}
		for svc, sr := range g.Services {
			out.Services[svc] = sr
		}
		for _, file := range slices.Sorted(maps.Keys(g.EnvFiles)) {
			out.EnvInjections = append(out.EnvInjections, EnvInjection{Path: file, Keys: g.EnvFiles[file]})
		}
	}
	sb := res.Resolved.Config.Sandboxes[sandbox]
	if out.Network == nil && len(sb.Services) == 0 {
		out.Network = &Network{Name: "", Status: "skipped"}
	}
	conn, err := guest.ConnectionEnv(res.Resolved.Config.Infra, sandbox, sb.Services, e.Env.getenv)
	if err != nil {
		return out, err
	}
	out.ConnectionEnv = guest.Redacted(conn)
	return out, nil
}
