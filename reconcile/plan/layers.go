package plan

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/hostpath"
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

// GuestObserved is what one running sandbox's guest reports.
type GuestObserved struct {
	Docker   string              // docker command prefix; "" when the runtime is not ready
	Verdict  string              // the runtime probe's answer
	Services *guest.ProjectState // nil when not observed
	Compose  *guest.ProjectState
	Err      string // why the guest could not be observed
}

// planLayers adds a sandbox's in-guest steps after its VM step (vm is the
// VM action's kind, "" when the VM is already as desired).
func planLayers(
	p *Plan,
	base Action,
	ds DesiredSandbox,
	applied map[string]string,
	g *GuestObserved,
	envOK map[string]bool,
	vm Kind,
	booting bool,
) {
	l := ds.Layers
	if l == nil {
		return
	}
	fresh := vm == Create || vm == Replace || vm == Adopt
	add := func(k Kind, cause string) {
		a := base
		a.Kind, a.Cause, a.Spec, a.OldDriver, a.WasRunning, a.Drift = k, cause, nil, "", false, false
		if g != nil {
			a.Docker = g.Docker
		}
		a.Bootstrap = ds.AdHoc && fresh && k != Compose // what every new ad-hoc sandbox gets
		p.Actions = append(p.Actions, a)
	}
	guestCause := func() string {
		switch {
		case vm == Adopt:
			return "adopted VM"
		case fresh:
			return "new VM"
		case booting:
			return "VM still booting"
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
			Driver: base.Driver, Docker: g.Docker, Note: "the container runtime is ready in the guest " +
				"(" + g.Docker + "); recorded"})
	}
	if l.Services != nil {
		planProject(
			add,
			Services,
			l.Services,
			applied,
			"services.",
			runtimeReady,
			g,
			func(g *GuestObserved) *guest.ProjectState { return g.Services },
			guestCause,
		)
	}
	for _, file := range slices.Sorted(maps.Keys(l.Env)) {
		if !envOK[file] {
			add(Env, "connection variables differ in "+filepath.Base(file))
			break
		}
	}
	if l.Compose != nil {
		planProject(
			add,
			Compose,
			l.Compose,
			applied,
			"compose.",
			runtimeReady,
			g,
			func(g *GuestObserved) *guest.ProjectState { return g.Compose },
			guestCause,
		)
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
