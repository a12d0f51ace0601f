package docker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
	"github.com/sandboxforge/sbf/state"
)

// scriptedGuest is a backend whose guest answers docker commands from a
// script; it records the command lines the guest's shell gets.
type scriptedGuest struct {
	drivers.Driver
	mu      sync.Mutex
	cmds    []string
	replies []reply
}

// reply answers the first command containing match; a once reply is
// used up by its first answer.
type reply struct {
	match string
	res   drivers.ExecResult
	once  bool
	used  bool
}

func (g *scriptedGuest) Exec(_ context.Context, _ string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cmds = append(g.cmds, req.Command)
	for i := range g.replies {
		r := &g.replies[i]
		if strings.Contains(req.Command, r.match) && !r.used {
			r.used = r.once
			return r.res, nil
		}
	}
	return drivers.ExecResult{}, nil
}

func (g *scriptedGuest) ran(part string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.cmds {
		if strings.Contains(c, part) {
			return true
		}
	}
	return false
}

func scriptedDocker(t *testing.T, s *sandboxtest.Sandbox, replies ...reply) (*Docker, *scriptedGuest) {
	g := &scriptedGuest{Driver: s.Driver, replies: replies}
	s.Driver = g
	tgt := s.Target()
	return &Docker{Prefix: "docker", target: tgt, clock: s.Clock, exec: tgt.Exec}, g
}

func out(stdout string) drivers.ExecResult { return drivers.ExecResult{Stdout: stdout} }

func failed(code int, stderr string) drivers.ExecResult {
	return drivers.ExecResult{ExitCode: code, Stderr: stderr}
}

func codeOf(t *testing.T, err error) *coded.Error {
	t.Helper()
	var ce *coded.Error
	if !errors.As(err, &ce) {
		t.Fatalf("not a coded error: %v", err)
	}
	return ce
}

func TestDockerFailuresAreClassifiedAsV1Did(t *testing.T) {
	for stderr, code := range map[string]string{
		"Error response from daemon: No such container: web\n":        CodeContainerNotFound,
		"Error response from daemon: container abc is not running\n":  CodeContainerNotFound,
		"Error response from daemon: pull access denied for nope\n":   CodeDockerFailed,
		"Command timed out after 600s\n":                              CodeDockerFailed,
		"Error: No such object: web (inspect of something else)\nx\n": CodeDockerFailed,
	} {
		ce := DockerFailed(DockerResult{Command: "docker exec web sh -lc ls", ExecResult: failed(1, stderr)})
		if ce.Code != code || ce.Details["command"] != "docker exec web sh -lc ls" || ce.Details["exit_code"] != 1 ||
			ce.Details["stderr"] != stderr || !strings.Contains(ce.Message, firstLine(stderr)) {
			t.Errorf("%q: %+v", stderr, ce)
		}
	}
}

// A docker tool's output never shows the connection secrets it was given.
func TestDockerScrubsSecretsFromOutput(t *testing.T) {
	s := sandboxtest.New(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n", "api")
	d, _ := scriptedDocker(t, s, reply{match: "up", res: drivers.ExecResult{ExitCode: 1,
		Stdout: "DB_PASSWORD=hunter22\n", Stderr: "bad hunter22"}})
	_, err := d.run(context.Background(), "docker compose up", call{Secrets: []string{"hunter22"}})
	if ce := codeOf(t, err); strings.Contains(mustJSONString(ce), "hunter22") {
		t.Errorf("secret in %+v", ce)
	}
}

func TestLogsFollowEndsAtItsTimeout(t *testing.T) {
	s := sandboxtest.New(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n", "api")
	timedOut := drivers.ExecResult{ExitCode: -1, TimedOut: true, Stdout: "line\n",
		Stderr: "Command timed out after 30s\n"}
	d, g := scriptedDocker(t, s, reply{match: "logs", res: timedOut})
	res, err := d.Logs(context.Background(), "web", 500, true, "1m")
	if err != nil || res.Stdout != "line\n" || !g.ran("docker logs --tail 500 --follow --since 1m -- web") {
		t.Errorf("follow: %+v %v %v", res, err, g.cmds)
	}
	if _, err := d.Logs(context.Background(), "web", 500, false, ""); codeOf(t, err).Code != CodeDockerFailed {
		t.Error("a timeout without follow is a failure")
	}
}

// fakeDockerOnPath puts a docker that logs its arguments (and answers the
// runtime probe as told) first on PATH, with a sudo that always fails.
func fakeDockerOnPath(t *testing.T, ready bool) string {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	version := "exit 0"
	if !ready {
		version = "exit 1"
	}
	testutil.WriteFile(t, filepath.Join(dir, "docker"),
		"#!/bin/sh\necho \"$*\" >> '"+log+"'\ncase \"$1\" in version) "+version+";; esac\n")
	testutil.WriteFile(t, filepath.Join(dir, "sudo"), "#!/bin/sh\nexit 1\n")
	for _, f := range []string{"docker", "sudo"} {
		if err := os.Chmod(filepath.Join(dir, f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return string(b)
}

func mustJSONString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestDockerCommandIsRecordedOrProbed(t *testing.T) {
	log := fakeDockerOnPath(t, true)
	s := sandboxtest.New(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n", "api")
	d, err := For(context.Background(), s.Target())
	if err != nil || d.Prefix != "docker" || !strings.Contains(readFile(t, log), "version -f {{.Server.Version}}") {
		t.Fatalf("probe: %v %v", d, err)
	}
	s.Record = &state.Sandbox{Guest: &state.GuestRecord{DockerCommand: "sudo -n docker"}}
	d, err = For(context.Background(), s.Target())
	if err != nil || d.Prefix != "sudo -n docker" {
		t.Errorf("recorded: %v %v", d, err)
	}
}

func TestDockerNotReady(t *testing.T) {
	fakeDockerOnPath(t, false)
	s := sandboxtest.New(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n", "api")
	_, err := For(context.Background(), s.Target())
	if ce := codeOf(t, err); ce.Code != CodeRuntimeNotReady || ce.Details["probe"] == "" {
		t.Errorf("not ready: %+v", ce)
	}
}
