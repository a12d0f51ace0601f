package composerun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/spec"
)

// A stand-in child: it answers with what it was given, so the tests see
// what crosses to the loader (the real one is composefile.Child's). It
// ends with syscall.Exit, which skips the race detector's second at exit.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == Command {
		var req Request
		if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
			syscall.Exit(2)
		}
		ans := Answer{Error: fmt.Sprintf("environment %q, environ %d", os.Environ(), len(req.Options.Environ))}
		switch req.Options.Sandbox {
		case "problems":
			ans = AnswerFor(nil, &guest.ProjectError{File: "/ws/compose.yaml",
				Problems: spec.Errors{{File: "/ws/compose.yaml", Line: 4, Column: 17, Key: "k", Message: "m"}}})
		case "project-error":
			ans = AnswerFor(nil, &guest.ProjectError{File: "/ws/compose.yaml", Err: errors.New("bad")})
		case "ok":
			ans = AnswerFor(&guest.Project{Name: "sbf-ok"}, nil)
		}
		json.NewEncoder(os.Stdout).Encode(ans)
		syscall.Exit(0)
	}
	os.Exit(m.Run())
}

// The child starts with no environment at all; sbf's own reaches it in
// the request, and only when the workspace's use_process_env says so.
func TestTheChildGetsOnlyWhatTheRequestCarries(t *testing.T) {
	t.Setenv("SBF_OPERATOR_TOKEN", "s3cret")
	for _, use := range []bool{false, true} {
		_, err := Load(context.Background(), os.Args[0], guest.LoadOptions{Sandbox: "env", Environ: os.Environ(),
			Compose: spec.Compose{UseProcessEnv: use}}, nil)
		want := "environment [], environ 0"
		if use {
			want = fmt.Sprintf("environment [], environ %d", len(os.Environ()))
		}
		if err == nil || err.Error() != want {
			t.Errorf("use_process_env %v: %v, want %s", use, err, want)
		}
	}
}

// What the child answers comes back as the loader returned it there.
func TestAnswersComeBackAsTheLoadersErrors(t *testing.T) {
	load := func(sandbox string) (*guest.Project, error) {
		return Load(context.Background(), os.Args[0], guest.LoadOptions{Sandbox: sandbox}, nil)
	}
	var pe *guest.ProjectError
	if _, err := load("problems"); !errors.As(err, &pe) || len(pe.Problems) != 1 || pe.Problems[0].Line != 4 ||
		err.Error() != "/ws/compose.yaml:4:17: k: m" || errors.Is(err, spec.ErrInvalid) {
		t.Errorf("problems: %v", err)
	}
	if _, err := load("project-error"); !errors.As(err, &pe) || pe.File != "/ws/compose.yaml" {
		t.Errorf("project error: %v", err)
	}
	if p, err := load("ok"); err != nil || p.Name != "sbf-ok" {
		t.Errorf("ok: %v %v", p, err)
	}
	if _, err := Load(context.Background(), "/nonexistent/sbf-server", guest.LoadOptions{}, nil); err == nil ||
		!strings.Contains(err.Error(), "loading compose files with /nonexistent/sbf-server") {
		t.Errorf("no binary: %v", err)
	}
}
