package reconcile

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/sandbox/docker"
	"github.com/sandboxforge/sbf/spec"
)

// recordingGuest is the fake Docker guest, with every command kept.
type recordingGuest struct {
	guestSim
	mu   *sync.Mutex
	cmds *[]string
}

func (r recordingGuest) Exec(ctx context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult,
	error) {
	r.mu.Lock()
	*r.cmds = append(*r.cmds, req.Command)
	r.mu.Unlock()
	return r.guestSim.Exec(ctx, instance, req)
}

func recordCommands(h *harness) func(part string) bool {
	var mu sync.Mutex
	var cmds []string
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		if gs, ok := d.(guestSim); ok {
			return recordingGuest{guestSim: gs, mu: &mu, cmds: &cmds}, err
		}
		return d, err
	}
	return func(part string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cmds {
			if strings.Contains(c, part) {
				return true
			}
		}
		return false
	}
}

// compose is a docker_compose call as the MCP door makes it: up and
// restart of the engine's stack ask the engine (ComposeUp), then the data
// plane finishes; every other call is the data plane's alone.
func (h *harness) compose(ctx context.Context, req docker.ComposeRequest) (docker.ComposeResult, error) {
	tgt, err := h.eng.Target(h.ws(), "api")
	if err != nil {
		return docker.ComposeResult{}, err
	}
	if !docker.EngineOwned(tgt, req) {
		return docker.Compose(ctx, tgt, req)
	}
	start := h.eng.Clock.Now()
	conv, err := h.eng.ComposeUp(ctx, h.ws(), "api")
	if err != nil {
		return docker.ComposeResult{}, err
	}
	return docker.AfterEngineUp(ctx, tgt, req, conv, start)
}

// up and restart of the stack the engine converges go through the
// engine; other actions on it run in its bundle folder.
func TestComposeOfTheEnginesStack(t *testing.T) {
	h := layeredHarness(t)
	ran := recordCommands(h)
	h.mustApply()
	ctx := context.Background()
	g := h.guests.get(h.instance("api"))
	ups := len(g.ups)
	testutil.WriteFile(t, filepath.Join(h.root, "compose.yaml"), appCompose+"  extra:\n    image: busybox\n")
	res, err := h.compose(ctx, docker.ComposeRequest{ProjectDir: h.root,
		Action: "up", Services: []string{"web"}, Detach: true})
	if err != nil || res.Engine == nil || !res.Engine.Converged || len(g.ups) != ups+1 ||
		res.Command != "sbf apply --target api" ||
		!strings.Contains(res.Stdout, "compose") || len(res.Warnings) != 1 ||
		res.ConnectionEnv["REDIS_HOST"] != "lima-redis-api" {
		t.Fatalf("up: %+v %v", res, err)
	}
	if res.Bridge["status"] != "ok" || res.Bridge["network"] != "lima-net-api" {
		t.Errorf("bridge: %v", res.Bridge)
	}
	res, err = h.compose(ctx, docker.ComposeRequest{ProjectDir: "~/.sbf/sbf-api/",
		Action: "restart", Services: []string{"web"}})
	if err != nil || res.Engine.Converged || !res.Engine.Restarted || len(g.ups) != ups+1 ||
		!ran("cd '.sbf/sbf-api' && docker compose -p sbf-api -f compose.yaml restart -- web") {
		t.Fatalf("restart of a converged stack: %+v %v", res, err)
	}
	res, err = h.compose(ctx, docker.ComposeRequest{ProjectDir: ".sbf/sbf-api",
		Action: "ps"})
	if err != nil || res.Engine != nil || !ran("cd '.sbf/sbf-api' && docker compose -p sbf-api -f compose.yaml ps") {
		t.Errorf("ps of the engine's stack: %+v %v", res, err)
	}
	res, err = h.compose(ctx, docker.ComposeRequest{ProjectDir: "/srv/other",
		Action: "up", Detach: true})
	if err != nil || res.Engine != nil || len(g.ups) != ups+1 || !ran("cd '/srv/other' && docker compose up -d") {
		t.Errorf("another project: %+v %v", res, err)
	}
}
