package reconcile

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/spec"
)

// Outside the engine's stack, compose runs v1's command line with the
// services' variables exported, then bridges the project's containers
// onto the services' network.
func TestComposeAsV1(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[infra.mysql]\nroot_password = \"s3cret-pw\"\n[sandboxes.api]\n")
	h.mustApply()
	d, g := scriptedDocker(t, h,
		reply{match: "inspect -f '{{.State.Running}}'", res: out("mysql\n")},
		reply{match: "compose -f dc.yml up", res: out("started with s3cret-pw\n")},
		reply{match: "network inspect", res: failed(1, "")},
		reply{match: "ps -q", res: out("c1\nc2\n")},
		reply{match: "}}' c1", res: out("bridge lima-net-api \n")})
	res, err := d.compose(context.Background(), ComposeRequest{ProjectDir: "/w/app", Action: "Up", Services: []string{"api"}, Detach: true},
		ComposeSpec{File: "dc.yml"}, "/w/app")
	if err != nil {
		t.Fatal(err)
	}
	if !g.ran("cd '/w/app' && export ") || !g.ran("export DB_HOST='lima-mysql-api' && ") || !g.ran("export DB_PASSWORD='s3cret-pw' && ") ||
		!g.ran("&& docker compose -f dc.yml up -d -- api") || g.ran("REDIS_URL") {
		t.Errorf("commands: %q", g.cmds)
	}
	if res.Command != "docker compose -f dc.yml up -d -- api" || res.Action != "up" || strings.Contains(res.Stdout, "s3cret") ||
		res.ConnectionEnv["DB_PASSWORD"] != "[redacted]" || res.ConnectionEnv["DB_HOST"] != "lima-mysql-api" {
		t.Errorf("result: %+v", res)
	}
	b := res.Bridge
	if b["status"] != "ok" || b["network"] != "lima-net-api" || b["network_status"] != "created" || b["containers_seen"] != 2 ||
		b["containers_connected"] != 1 || b["containers_already_connected"] != 1 || !g.ran("docker network connect lima-net-api c2") {
		t.Errorf("bridge: %v", b)
	}
	g.cmds = nil
	if _, err := d.compose(context.Background(), ComposeRequest{ProjectDir: "/w", Action: "exec", Services: []string{"api"}}, ComposeSpec{}, "/w"); codeOf(t, err).Code != CodeDockerFailed || g.ran("compose") {
		t.Errorf("exec without a command: %v %q", err, g.cmds)
	}
}

// recordingGuest is the fake Docker guest, with every command kept.
type recordingGuest struct {
	guestSim
	mu   *sync.Mutex
	cmds *[]string
}

func (r recordingGuest) Exec(ctx context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult, error) {
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
	res, err := h.target(t, "api").Compose(ctx, h.ws(), ComposeRequest{ProjectDir: h.root, Action: "up", Services: []string{"web"}, Detach: true})
	if err != nil || res.Engine == nil || !res.Engine.Converged || len(g.ups) != ups+1 || res.Command != "sbf apply --target api" ||
		!strings.Contains(res.Stdout, "compose") || len(res.Warnings) != 1 || res.ConnectionEnv["REDIS_HOST"] != "lima-redis-api" {
		t.Fatalf("up: %+v %v", res, err)
	}
	if res.Bridge["status"] != "ok" || res.Bridge["network"] != "lima-net-api" {
		t.Errorf("bridge: %v", res.Bridge)
	}
	res, err = h.target(t, "api").Compose(ctx, h.ws(), ComposeRequest{ProjectDir: "~/.sbf/sbf-api/", Action: "restart", Services: []string{"web"}})
	if err != nil || res.Engine.Converged || !res.Engine.Restarted || len(g.ups) != ups+1 ||
		!ran("cd '.sbf/sbf-api' && docker compose -p sbf-api -f compose.yaml restart -- web") {
		t.Fatalf("restart of a converged stack: %+v %v", res, err)
	}
	res, err = h.target(t, "api").Compose(ctx, h.ws(), ComposeRequest{ProjectDir: ".sbf/sbf-api", Action: "ps"})
	if err != nil || res.Engine != nil || !ran("cd '.sbf/sbf-api' && docker compose -p sbf-api -f compose.yaml ps") {
		t.Errorf("ps of the engine's stack: %+v %v", res, err)
	}
	res, err = h.target(t, "api").Compose(ctx, h.ws(), ComposeRequest{ProjectDir: "/srv/other", Action: "up", Detach: true})
	if err != nil || res.Engine != nil || len(g.ups) != ups+1 || !ran("cd '/srv/other' && docker compose up -d") {
		t.Errorf("another project: %+v %v", res, err)
	}
	if _, owned := h.target(t, "api").engineStack(h.root, "other.yaml"); owned {
		t.Error("a file outside [compose] files named the engine's stack")
	}
}
