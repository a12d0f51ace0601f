package docker

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
)

// Outside the engine's stack, compose runs v1's command line with the
// services' variables exported, then bridges the project's containers
// onto the services' network.
func TestComposeAsV1(t *testing.T) {
	s := sandboxtest.New(t,
		"[vm]\ndriver = \"sim\"\n[infra.mysql]\nroot_password = \"s3cret-pw\"\n[sandboxes.api]\n", "api")
	d, g := scriptedDocker(t, s,
		reply{match: "inspect -f '{{.State.Running}}'", res: out("mysql\n")},
		reply{match: "compose -f dc.yml up", res: out("started with s3cret-pw\n")},
		reply{match: "network inspect", res: failed(1, "")},
		reply{match: "ps -q", res: out("c1\nc2\n")},
		reply{match: "}}' c1", res: out("bridge lima-net-api \n")})
	res, err := d.compose(context.Background(), ComposeRequest{ProjectDir: "/w/app", Action: "Up",
		Services: []string{"api"}, Detach: true},
		ComposeSpec{File: "dc.yml"}, "/w/app")
	if err != nil {
		t.Fatal(err)
	}
	if !g.ran("cd '/w/app' && export ") || !g.ran("export DB_HOST='lima-mysql-api' && ") ||
		!g.ran("export DB_PASSWORD='s3cret-pw' && ") ||
		!g.ran("&& docker compose -f dc.yml up -d -- api") || g.ran("REDIS_URL") {
		t.Errorf("commands: %q", g.cmds)
	}
	if res.Command != "docker compose -f dc.yml up -d -- api" || res.Action != "up" ||
		strings.Contains(res.Stdout, "s3cret") ||
		res.ConnectionEnv["DB_PASSWORD"] != "[redacted]" || res.ConnectionEnv["DB_HOST"] != "lima-mysql-api" {
		t.Errorf("result: %+v", res)
	}
	b := res.Bridge
	if b["status"] != "ok" || b["network"] != "lima-net-api" || b["network_status"] != "created" ||
		b["containers_seen"] != 2 ||
		b["containers_connected"] != 1 || b["containers_already_connected"] != 1 ||
		!g.ran("docker network connect lima-net-api c2") {
		t.Errorf("bridge: %v", b)
	}
	g.cmds = nil
	if _, err := d.compose(context.Background(), ComposeRequest{ProjectDir: "/w", Action: "exec",
		Services: []string{"api"}}, ComposeSpec{}, "/w"); codeOf(t, err).Code != CodeDockerFailed || g.ran("compose") {
		t.Errorf("exec without a command: %v %q", err, g.cmds)
	}
}

// A compose file outside [compose] files never names the engine's stack.
func TestOnlyTheEnginesFilesNameItsStack(t *testing.T) {
	s := sandboxtest.New(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\ncompose = true\n", "api")
	tgt := s.Target()
	if _, owned := engineStack(tgt, s.Root, "other.yaml"); owned {
		t.Error("a file outside [compose] files named the engine's stack")
	}
	if _, owned := engineStack(tgt, s.Root, "compose.yaml"); !owned {
		t.Error("the workspace's own compose.yaml did not name the engine's stack")
	}
}
