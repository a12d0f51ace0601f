// Package composerun is the parent's side of loading compose files: it
// runs the loader as a child (`sbf-server compose-load`), which confines
// itself to the workspace before it reads anything there
// (drivers/guest/composefile.Child), and it is the wire between the two.
// It links no compose-go, so sbf, which runs the child too, stays small.
//
// The child gets no environment: the variables a load may use travel in
// the request, and sbf's own environment only when the workspace's
// committed [compose] use_process_env asks for it. A compose file that
// names /proc/self/environ finds nothing there even on a host without
// Landlock.
package composerun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
)

// Command is the child's command line: `<sbf-server> compose-load`.
const Command = "compose-load"

// Request is what the child reads on its standard input.
type Request struct {
	Options guest.LoadOptions `json:"options"`
}

// Answer is what the child prints: the project, or why it does not load.
type Answer struct {
	Project *guest.Project `json:"project,omitempty"`
	// Problems are paths the compose files name outside the workspace.
	Problems spec.Errors `json:"problems,omitempty"`
	File     string      `json:"file,omitempty"` // the file a guest.ProjectError names
	Error    string      `json:"error,omitempty"`
	// Limit is a bound the load was refused at (COMPOSE_LIMIT_EXCEEDED).
	Limit *coded.Error `json:"limit,omitempty"`
	// Confinement says what the child gave up before reading.
	Confinement string `json:"confinement,omitempty"`
}

// AnswerFor is the answer that carries a load's outcome.
func AnswerFor(p *guest.Project, err error) Answer {
	a := Answer{Project: p}
	var pe *guest.ProjectError
	var limit *coded.Error
	switch {
	case err == nil:
	case errors.As(err, &limit) && limit.Code == coded.ComposeLimit:
		a.Limit = limit
		if errors.As(err, &pe) {
			a.File = pe.File
		}
	case errors.As(err, &pe) && len(pe.Problems) > 0:
		a.File, a.Problems = pe.File, pe.Problems
	case errors.As(err, &pe):
		a.File, a.Error = pe.File, pe.Err.Error()
	default:
		a.Error = err.Error()
	}
	return a
}

// Err is the answer's failure as the loader returned it in the child.
func (a Answer) Err() error {
	switch {
	case a.Limit != nil:
		return &guest.ProjectError{File: a.File, Err: a.Limit}
	case len(a.Problems) > 0:
		return &guest.ProjectError{File: a.File, Problems: a.Problems}
	case a.Error != "" && a.File != "":
		return &guest.ProjectError{File: a.File, Err: errors.New(a.Error)}
	case a.Error != "":
		return errors.New(a.Error)
	}
	return nil
}

// Limits on what a parent takes from the child.
const (
	maxAnswer = 64 << 20
	maxStderr = 64 << 10
)

// Load runs bin's compose-load child for o. debugf (may be nil) hears
// what the child confined itself to and what it said on stderr.
func Load(ctx context.Context, bin string, o guest.LoadOptions, debugf func(string, ...any)) (*guest.Project, error) {
	if !o.Compose.UseProcessEnv {
		o.Environ = nil // only the operator's use_process_env sends sbf's environment
	}
	in, err := json.Marshal(Request{Options: o})
	if err != nil {
		return nil, err
	}
	out, errb := &limited{max: maxAnswer}, &limited{max: maxStderr}
	wall, cancel := context.WithTimeout(ctx, WallLimit)
	defer cancel()
	cmd := proc.Command(wall, bin, Command)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = bytes.NewReader(in), out, errb, childEnv()
	if err := cmd.Run(); err != nil {
		if limit := overLimit(ctx, wall, cmd.ProcessState, errb.String(), o.Sandbox); limit != nil {
			return nil, limit
		}
		return nil, fmt.Errorf("loading compose files with %s: %w: %s", bin, err, errb.String())
	}
	var ans Answer
	if out.over {
		return nil, limitError("answer_bytes", maxAnswer, map[string]any{"sandbox": o.Sandbox},
			"loading the compose files of sandbox %s made a project of more than %d bytes", o.Sandbox, maxAnswer)
	}
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		return nil, fmt.Errorf("loading compose files with %s: %w", bin, err)
	}
	if debugf != nil {
		debugf("compose files of sandbox %s loaded in a child: %s", o.Sandbox, ans.Confinement)
		if errb.Len() > 0 {
			debugf("the compose loader said: %s", errb.String())
		}
	}
	if err := ans.Err(); err != nil {
		return nil, err
	}
	if ans.Project == nil {
		return nil, fmt.Errorf("loading compose files with %s: it answered no project", bin)
	}
	return ans.Project, nil
}

// overLimit names the bound a failed child ran into, nil when none: the
// wall clock (the parent's deadline, not its caller's), its CPU time (the
// kernel kills it at the limit: SIGKILL after much CPU) or its address
// space (Go's runtime dies "out of memory", or finding no address space;
// a child built with the race detector, as the tests' is, may fail in the
// detector's own allocator first).
func overLimit(ctx, wall context.Context, ps *os.ProcessState, stderr, sandbox string) *coded.Error {
	switch {
	case ctx.Err() != nil:
		return nil
	case wall.Err() != nil:
		return wallExceeded(sandbox)
	case strings.Contains(stderr, "fatal error") &&
		(strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "address space")),
		strings.Contains(stderr, "ThreadSanitizer failed to allocate"):
		return memoryExceeded(sandbox)
	case ps == nil:
		return nil
	}
	cpu := ps.UserTime() + ps.SystemTime()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL &&
		cpu >= ChildLimits.CPU/2 {
		return cpuExceeded(sandbox, cpu)
	}
	return nil
}

// childEnv is the child's whole environment: nothing, but what Windows
// needs to start a process at all.
func childEnv() []string {
	if runtime.GOOS == "windows" {
		return []string{"SystemRoot=" + os.Getenv("SystemRoot")}
	}
	return []string{}
}

// limited keeps up to max bytes and notes whether more came.
type limited struct {
	bytes.Buffer
	max  int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.max - l.Len(); len(p) > room {
		l.over = true
		l.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return l.Buffer.Write(p)
}

var _ io.Writer = (*limited)(nil)
