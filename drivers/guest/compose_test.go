package guest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
)

// scripted is a Runner that answers commands from a script of recorded
// docker outputs, matched by substring, and records what ran.
type scripted struct {
	replies []reply
	ran     []string
	copied  map[string][]string // remote → files in the staged bundle
}

type reply struct {
	match string
	res   drivers.ExecResult
	times int // 0: always
}

func (s *scripted) Exec(_ context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
	s.ran = append(s.ran, req.Command)
	for i, r := range s.replies {
		if strings.Contains(req.Command, r.match) {
			if r.times > 0 {
				s.replies[i].times--
				if s.replies[i].times == 0 {
					s.replies = append(s.replies[:i], s.replies[i+1:]...)
				}
			}
			return r.res, nil
		}
	}
	return drivers.ExecResult{}, nil
}

func (s *scripted) CopyIn(_ context.Context, local, remote string) error {
	if s.copied == nil {
		s.copied = map[string][]string{}
	}
	return filepath.Walk(local, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(local, p)
			s.copied[remote] = append(s.copied[remote], rel)
		}
		return err
	})
}

func out(stdout string, code int) drivers.ExecResult {
	return drivers.ExecResult{Stdout: stdout, ExitCode: code}
}

func TestEnsureRuntime(t *testing.T) {
	ready := &scripted{replies: []reply{{match: "compose version", res: out("ready:sudo -n docker\n", 0)}}}
	if p, err := EnsureRuntime(context.Background(), ready, true); err != nil || p != "sudo -n docker" ||
		len(ready.ran) != 1 {
		t.Errorf("ready runtime: %q %v after %d commands", p, err, len(ready.ran))
	}
	missing := &scripted{replies: []reply{{match: "compose version", res: out("missing\n", 0)}}}
	_, err := EnsureRuntime(context.Background(), missing, false)
	var ge *coded.Error
	if !errors.As(err, &ge) || ge.Code != "RUNTIME_NOT_READY" || ge.Details["probe"] != "missing" {
		t.Errorf("install disabled: %v", err)
	}
	install := &scripted{replies: []reply{
		{match: "compose version", res: out("missing\n", 0), times: 1},
		{match: "compose version", res: out("ready:docker\n", 0)},
	}}
	p, err := EnsureRuntime(context.Background(), install, true)
	if err != nil || p != "docker" || !strings.Contains(strings.Join(install.ran, "\n"), "apt-get install") ||
		!strings.Contains(strings.Join(install.ran, "\n"), "systemctl enable --now docker") {
		t.Errorf("install: %q %v\n%s", p, err, strings.Join(install.ran, "\n---\n"))
	}
	failing := &scripted{replies: []reply{{match: "compose version", res: out("missing\n", 0)}, {match: "apt-get",
		res: drivers.ExecResult{ExitCode: 2, Stderr: "no apt-get or dnf"}}}}
	if _, err := EnsureRuntime(context.Background(), failing, true); !errors.As(err, &ge) ||
		!strings.Contains(ge.Details["output"].(string), "no apt-get") {
		t.Errorf("failed install: %v", err)
	}
}

const observed = `@@bundle 0123456789abcdef
@@hash
web 1111
db 2222
@@ps
sbf-api web 1111 running
sbf-api db 9999 running
sbf-api old 3333 exited
sbf-other web 1111 exited
`

func TestObserveAndDrift(t *testing.T) {
	r := &scripted{replies: []reply{{match: "config --hash", res: out(observed, 0)}}}
	s, err := ObserveProject(context.Background(), r, "docker", "sbf-api")
	if err != nil || s.Bundle != "0123456789abcdef" || s.Want["db"] != "2222" ||
		s.Containers["db"].Hash != "9999" || s.Containers["old"].State != "exited" {
		t.Fatalf("state = %+v, %v", s, err)
	}
	if !strings.Contains(r.ran[0], "cd '.sbf/sbf-api'") ||
		!strings.Contains(r.ran[0], "com.docker.compose.project='sbf-api'") {
		t.Errorf("script = %s", r.ran[0])
	}
	p := &Project{Bundle: "0123456789abcdef", Services: map[string]string{"web": "a", "db": "b"}}
	if d := strings.Join(p.Drift(s, nil), "; "); d != "db differs from its config; old is an orphan" {
		t.Errorf("drift = %q", d)
	}
	s.Containers["db"] = Container{Hash: "2222", State: "running"}
	delete(s.Containers, "old")
	if d := p.Drift(s, nil); len(d) != 0 {
		t.Errorf("converged project drifts: %v", d)
	}
	p.Bundle = "fedcba9876543210"
	if d := p.Drift(s, map[string]string{"web": "a", "db": "old"}); strings.Join(d, "") != "changed: db" {
		t.Errorf("edited db: %v", d)
	}
	none, _ := ObserveProject(context.Background(), &scripted{replies: []reply{{match: "cd",
		res: out("@@nobundle\n", 0)}}}, "docker", "x")
	if d := p.Drift(none, nil); strings.Join(d, "") != "not deployed" {
		t.Errorf("fresh guest: %v", d)
	}
}

func TestApplyProjectShipsTheBundleAndRunsUp(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "app"), 0o755)
	os.WriteFile(filepath.Join(dir, "app", "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	p := &Project{Name: "sbf-api", Root: dir, Dir: dir, Resolved: []byte("services: {}\n"), Extra: []string{"app"},
		Bundle: "b1"}
	upped := out("Creating\n@@ps\nsbf-api web 1111 running\nsbf-api old 2 exited\n", 0)
	r := &scripted{replies: []reply{{match: "up -d", res: upped}}}
	hashes, err := ApplyProject(context.Background(), r, "docker", p)
	if err != nil || len(hashes) != 2 || hashes["web"] != "1111" || hashes["old"] != "2" {
		t.Fatalf("containers after up: %v, %v", hashes, err)
	}
	files := strings.Join(r.copied[".sbf/sbf-api.new"], ",")
	if files != ".sbf-bundle,app/Dockerfile,compose.yaml" {
		t.Errorf("shipped %s", files)
	}
	up := r.ran[len(r.ran)-1]
	if !strings.Contains(up, "mv '.sbf/sbf-api.new' '.sbf/sbf-api'") ||
		!strings.Contains(up, "docker compose -p 'sbf-api' -f compose.yaml up -d --remove-orphans --build && ") ||
		!strings.Contains(up, "docker ps -a --filter label=com.docker.compose.project='sbf-api'") {
		t.Errorf("up = %s", up)
	}
	bad := &scripted{replies: []reply{{match: "up -d", res: drivers.ExecResult{ExitCode: 1,
		Stderr: "pull access denied for nope"}}}}
	var ge *coded.Error
	if _, err := ApplyProject(context.Background(), bad, "docker", p); !errors.As(err, &ge) ||
		ge.Code != "DOCKER_COMMAND_FAILED" || !strings.Contains(ge.Message, "pull access denied") {
		t.Errorf("failed up: %v", err)
	}
}

func TestWaitReady(t *testing.T) {
	probes := ReadinessProbes(map[string]string{"mysql": "lima-mysql-api", "redis": "lima-redis-api"})
	r := &scripted{replies: []reply{{match: "mysqladmin", res: drivers.ExecResult{ExitCode: 1,
		Stderr: "connect failed"}, times: 2}}}
	noSleep := func(context.Context, time.Duration) error { return nil }
	attempts, err := WaitReady(context.Background(), r, "docker", probes, 90*time.Second, noSleep)
	if err != nil || attempts["mysql"] != 3 || attempts["redis"] != 1 {
		t.Errorf("attempts %v, %v", attempts, err)
	}
	never := &scripted{replies: []reply{{match: "redis-cli", res: drivers.ExecResult{ExitCode: 1,
		Stdout: "Could not connect"}}}}
	_, err = WaitReady(context.Background(), never, "docker", probes, 10*time.Second, noSleep)
	var ge *coded.Error
	if !errors.As(err, &ge) || ge.Code != "SERVICE_NOT_READY" ||
		ge.Details["last_probe_results"].(map[string]string)["redis"] != "Could not connect" {
		t.Errorf("never ready: %#v", err)
	}
}
