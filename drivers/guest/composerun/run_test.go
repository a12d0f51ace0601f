package composerun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/confine"
	"github.com/sandboxforge/sbf/spec"
)

// A stand-in child: it answers with what it was given, so the tests see
// what crosses to the loader (the real one is composefile.Child's). It
// ends with syscall.Exit, which skips the race detector's second at exit.
func TestMain(m *testing.M) {
	ChildLimits.CPU = time.Second // both halves: the child bounds itself, the parent judges by it
	if len(os.Args) == 2 && os.Args[1] == Command {
		var req Request
		if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
			syscall.Exit(2)
		}
		ans := Answer{Error: fmt.Sprintf("environment %q, environ %d", os.Environ(), len(req.Options.Environ))}
		spend(req.Options.Sandbox)
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

// kept holds what spend grows by, so nothing lets it go.
var kept [][]byte

// spend is what a stand-in child asked to go past a bound does, bounded
// as the real child is.
func spend(how string) {
	if how != "cpu" && how != "memory" && how != "wall" {
		return
	}
	if _, err := confine.Bound(ChildLimits); err != nil {
		syscall.Exit(3)
	}
	for start := time.Now(); time.Since(start) < time.Minute; {
		switch how {
		case "memory":
			kept = append(kept, make([]byte, 64<<20)) // kept: the address space grows
		case "wall":
			time.Sleep(time.Second)
		}
	}
	syscall.Exit(0)
}

// A child that spins, grows or hangs is stopped at its bound, and the
// load fails with COMPOSE_LIMIT_EXCEEDED naming it.
func TestAChildPastABoundIsStoppedAndNamed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the child bounds its CPU time and memory on Linux")
	}
	for how, limit := range map[string]string{"cpu": "cpu", "memory": "address_space", "wall": "wall_clock"} {
		t.Run(how, func(t *testing.T) {
			if how == "wall" { // only this child's: a CPU-bound child on a busy machine takes longer
				defer func(wall time.Duration) { WallLimit = wall }(WallLimit)
				WallLimit = 2 * time.Second
			}
			_, err := Load(context.Background(), os.Args[0], guest.LoadOptions{Sandbox: how}, nil)
			c := coded.Of(err, "")
			if c == nil || c.Code != coded.ComposeLimit || c.Details["limit"] != limit ||
				!strings.Contains(c.Message, "sandbox "+how) {
				t.Errorf("got %v (%+v), want %s named", err, c, limit)
			}
		})
	}
}

// The stderr of a child that died at its address-space bound names the
// bound, whichever allocator failed first: Go's, or the race detector's
// in a child built with it (the tests').
func TestAChildOutOfAddressSpaceIsNamed(t *testing.T) {
	ctx, wall := context.Background(), context.Background()
	for _, stderr := range []string{
		"fatal error: out of memory\n\ngoroutine 1 [running]:",
		"==29091==ERROR: ThreadSanitizer failed to allocate 0x2000000 (33554432) bytes at address 306004000000 " +
			"(errno: 12)\n",
	} {
		c := overLimit(ctx, wall, nil, stderr, "api")
		if c == nil || c.Details["limit"] != "address_space" {
			t.Errorf("stderr %q: %+v, want address_space", stderr, c)
		}
	}
	if c := overLimit(ctx, wall, nil, "yaml: line 3: mapping values are not allowed here\n", "api"); c != nil {
		t.Errorf("a plain failure was named a bound: %+v", c)
	}
}
