package docker

import (
	"errors"
	"slices"
	"testing"

	"github.com/sandboxforge/sbf/internal/shellquote"

	"github.com/sandboxforge/sbf/internal/coded"
)

// The command lines are v1's, byte for byte (its own tests' strings).
func TestDockerCommandLinesAreV1s(t *testing.T) {
	fifty := 50
	compose := func(c ComposeSpec) []string {
		args, err := ComposeArgs(c)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		return args
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"build", BuildArgs(BuildSpec{Context: ".", Tag: "repo/app:dev", Dockerfile: "Dockerfile", Target: "prod",
			NoCache:   true,
			BuildArgs: []KV{{"A", "1"}}, Labels: []KV{{"git.commit", "abc"}, {"git.branch", ""}}}),
			"docker build -t repo/app:dev -f Dockerfile --build-arg A=1 --label git.commit=abc --label git.branch= --target " +
				"prod --no-cache -- ."},
		{"run", RunArgs(RunSpec{Image: "img:tag", Command: "pytest -q", Name: "runner", Detach: true,
			Privileged: true}),
			"docker run -d --name runner --privileged -- img:tag sh -lc 'pytest -q'"},
		{"run, every flag", RunArgs(RunSpec{Image: "img", Workdir: "/src", Env: map[string]string{"B": "2 3", "A": "1"},
			Volumes: []string{"/w:/w"}, Ports: []string{"8080:80"}}),
			"docker run -w /src -e A=1 -e 'B=2 3' -v /w:/w -p 8080:80 -- img"},
		{"exec", ExecArgs("web", "echo it's"), `docker exec -- web sh -lc 'echo it'"'"'s'`},
		{"logs", LogsArgs("web", 500, false, ""), "docker logs --tail 500 -- web"},
		{"logs follow", LogsArgs("web", 10, true, "2m"), "docker logs --tail 10 --follow --since 2m -- web"},
		{"ps", PsArgs(false), "docker ps"},
		{"ps -a", PsArgs(true), "docker ps -a"},
		{"compose up", compose(ComposeSpec{File: "docker-compose.yml", Action: "up", Services: []string{"api"},
			Detach: true}),
			"docker compose -f docker-compose.yml up -d -- api"},
		{"compose up attached", compose(ComposeSpec{Action: " UP "}), "docker compose up"},
		{"compose logs", compose(ComposeSpec{File: "docker-compose.yml", Action: "logs", Follow: true, Since: "2m",
			Tail: &fifty, Services: []string{"api"}}),
			"docker compose -f docker-compose.yml logs --follow --since 2m --tail 50 -- api"},
		{"compose exec", compose(ComposeSpec{File: "docker-compose.yml", Action: "exec", Services: []string{"api",
			"x"}, Command: "pytest -q"}),
			"docker compose -f docker-compose.yml exec -T -- api sh -lc 'pytest -q'"},
		{"compose down takes no services", compose(ComposeSpec{Action: "down", Services: []string{"api"}}),
			"docker compose down"},
		{"compose ps -q of the engine's stack", compose(ComposeSpec{Project: "sbf-api", File: "compose.yaml",
			Action: "ps", Quiet: true}),
			"docker compose -p sbf-api -f compose.yaml ps -q"},
	} {
		if got := shellquote.Join(append([]string{"docker"}, tc.args...)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestCleanupModes(t *testing.T) {
	d := &Docker{Prefix: "sudo -n docker"}
	if got, want := d.cleanupLine("safe"),
		"sudo -n docker container prune -f && sudo -n docker image prune -f"; got != want {
		t.Errorf("safe: %s", got)
	}
	if got := d.cleanupLine(" Aggressive"); got != "sudo -n docker container prune -f && sudo -n docker image prune "+
		"-af && "+
		"sudo -n docker network prune -f && sudo -n docker volume prune -f" {
		t.Errorf("aggressive: %s", got)
	}
	if d.cleanupLine("agressive") != d.cleanupLine("safe") {
		t.Error("an unknown mode is not the safe one")
	}
}

func TestComposeRefusesWhatV1Refused(t *testing.T) {
	_, err := ComposeArgs(ComposeSpec{Action: "rm"})
	var ce *coded.Error
	if !errors.As(err, &ce) || ce.Code != CodeDockerFailed ||
		!slices.Equal(ce.Details["allowed_actions"].([]string), ComposeActions) {
		t.Errorf("unknown action: %v", err)
	}
	for _, c := range []ComposeSpec{{Action: "exec", Command: "ls"}, {Action: "exec", Services: []string{"api"}}} {
		if _, err := ComposeArgs(c); !errors.As(err, &ce) || ce.Code != CodeDockerFailed {
			t.Errorf("exec %+v: %v", c, err)
		}
	}
}

func TestShlexQuoteMatchesPython(t *testing.T) {
	for in, want := range map[string]string{
		"": "''", "abc": "abc", "a-b_c.d/e:f=g,h@i%j+k": "a-b_c.d/e:f=g,h@i%j+k",
		"a b": "'a b'", "it's": `'it'"'"'s'`, "{{.State.Running}}": "'{{.State.Running}}'", "$HOME": "'$HOME'",
		"é": "'é'",
	} {
		if got := shellquote.Word(in); got != want {
			t.Errorf("shellquote.Word(%q) = %s, want %s", in, got, want)
		}
	}
}
