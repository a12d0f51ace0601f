// Package docker is SandboxForge v1's Docker tools over a sandbox's guest:
// v1's command lines, codes and prebuilt-image cache, run through the
// data plane (package sandbox). up and restart of a sandbox's own
// [compose] stack go through the engine, which the door passes in.
package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/shellquote"
	"github.com/sandboxforge/sbf/sandbox"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
)

// Docker tool errors, in SandboxForge v1's vocabulary.
const (
	CodeContainerNotFound = "CONTAINER_NOT_FOUND"
	CodeDockerFailed      = "DOCKER_COMMAND_FAILED"
	CodeInsufficientDisk  = "INSUFFICIENT_DISK"
	CodePrebuiltInvalid   = "PREBUILT_IMAGE_INVALID"
	CodeRuntimeNotReady   = "RUNTIME_NOT_READY"
)

// v1's timeouts per docker command.
const (
	dockerShort  = 2 * time.Minute  // ps, images, inspect, tag, network
	dockerLong   = 10 * time.Minute // exec (default), logs, cleanup
	dockerRun    = 20 * time.Minute // run, compose
	dockerBuild  = 30 * time.Minute
	dockerFollow = 30 * time.Second // logs --follow returns after this
)

// Docker runs docker commands in one sandbox's guest through the command
// prefix its runtime answers to ("docker" or "sudo -n docker").
type Docker struct {
	Prefix string
	target *sandbox.Target
	clock  clock.Clock
	exec   func(context.Context, drivers.ExecRequest) (drivers.ExecResult, error)
}

func (d *Docker) now() time.Time { return d.clock.Now() }

// DockerResult is one docker command and what it did.
type DockerResult struct {
	Command string // the command line, as v1 reported it
	drivers.ExecResult
}

// For finds the target's docker command: the one the engine recorded
// when it converged the runtime layer, else what a probe of the guest
// finds (v1 probed likewise when its lease had none). RUNTIME_NOT_READY
// when neither works.
func For(ctx context.Context, t *sandbox.Target) (*Docker, error) {
	d := &Docker{target: t, clock: t.Clock, exec: t.Exec}
	if d.Prefix = recordedDocker(t); d.Prefix != "" {
		return d, nil
	}
	prefix, verdict, err := guest.ProbeRuntime(ctx, execRunner(t.Exec))
	if err != nil {
		return nil, err
	}
	if prefix == "" {
		return nil, coded.New(CodeRuntimeNotReady, map[string]any{"sandbox": t.Sandbox, "probe": verdict,
			"next_steps": []string{"run prepare_workspace (or sbf apply) to install and start Docker in the guest"}},
			"Docker is not ready in sandbox %s (probe: %s)", t.Sandbox, verdict)
	}
	d.Prefix = prefix
	return d, nil
}

// recordedDocker is the docker command the state file held for the
// target when it was found, "" when none (a probe then decides).
func recordedDocker(t *sandbox.Target) string {
	sb := t.Record
	if sb == nil {
		return ""
	}
	if sb.Guest != nil && sb.Guest.DockerCommand != "" {
		return sb.Guest.DockerCommand
	}
	return sb.Applied["docker_command"]
}

// execRunner lets guest.ProbeRuntime run over a target's exec; the probe
// copies nothing.
type execRunner func(context.Context, drivers.ExecRequest) (drivers.ExecResult, error)

func (r execRunner) Exec(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
	return r(ctx, req)
}

func (r execRunner) CopyIn(context.Context, string, string) error {
	return errors.New("the docker probe copies nothing")
}

// line is the command line of a docker invocation.
func (d *Docker) line(args []string) string {
	return shellquote.Join(append(strings.Fields(d.Prefix), args...))
}

// call is how one docker command runs.
type call struct {
	Timeout time.Duration
	Workdir string
	Env     map[string]string
	// Secrets are values scrubbed from the output (the connection
	// variables a compose command got).
	Secrets []string
	// TimeoutIsEnd: the command follows output until the timeout ends it,
	// so a timeout is a result, not a failure.
	TimeoutIsEnd bool
}

// run runs a command line; a non-zero exit is CONTAINER_NOT_FOUND or
// DOCKER_COMMAND_FAILED with v1's details.
func (d *Docker) run(ctx context.Context, command string, c call) (DockerResult, error) {
	res, err := d.exec(ctx, drivers.ExecRequest{Command: command, Timeout: c.Timeout, Workdir: c.Workdir, Env: c.Env})
	if err != nil {
		return DockerResult{}, fmt.Errorf("running %s in sandbox %s: %w", command, d.sandbox(), err)
	}
	res.Stdout, res.Stderr = scrub(res.Stdout, c.Secrets), scrub(res.Stderr, c.Secrets)
	out := DockerResult{Command: command, ExecResult: res}
	if res.ExitCode != 0 && !(c.TimeoutIsEnd && res.TimedOut) {
		return out, DockerFailed(out)
	}
	return out, nil
}

func (d *Docker) sandbox() string {
	if d.target == nil {
		return "?"
	}
	return d.target.Sandbox
}

// DockerFailed classifies a failed docker command as v1 did: stderr
// naming a missing or stopped container is CONTAINER_NOT_FOUND, anything
// else DOCKER_COMMAND_FAILED; details carry the command and its outcome.
func DockerFailed(r DockerResult) *coded.Error {
	details := map[string]any{"command": r.Command, "exit_code": r.ExitCode, "stdout": r.Stdout,
		"stderr": r.Stderr, "duration_ms": r.DurationMS}
	first := firstLine(r.Stderr)
	lower := strings.ToLower(r.Stderr)
	if strings.Contains(lower, "no such container") || strings.Contains(lower, "is not running") {
		return coded.New(CodeContainerNotFound, details, "Container was not found: %s", first)
	}
	return coded.New(CodeDockerFailed, details, "Docker command failed (exit %d): %s", r.ExitCode, first)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// scrub replaces each secret value in out: a command's own output may
// echo the variables it was given.
func scrub(out string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= 3 {
			out = strings.ReplaceAll(out, s, "[redacted]")
		}
	}
	return out
}

// Command runs one docker subcommand with v1's short timeout.
func (d *Docker) Command(ctx context.Context, args []string) (DockerResult, error) {
	return d.run(ctx, d.line(args), call{Timeout: dockerShort})
}

// Run starts a container (`docker run`); the container is the first line
// of its output.
func (d *Docker) Run(ctx context.Context, r RunSpec) (DockerResult, error) {
	return d.run(ctx, d.line(RunArgs(r)), call{Timeout: dockerRun})
}

// Exec runs a command in a container.
func (d *Docker) Exec(ctx context.Context, container, command string, timeout time.Duration) (DockerResult, error) {
	return d.run(ctx, d.line(ExecArgs(container, command)), call{Timeout: timeout})
}

// Logs returns a container's last lines; following, it returns what came
// within 30 seconds.
func (d *Docker) Logs(
	ctx context.Context,
	container string,
	tail int,
	follow bool,
	since string,
) (DockerResult, error) {
	c := call{Timeout: dockerLong, TimeoutIsEnd: follow}
	if follow {
		c.Timeout = dockerFollow
	}
	return d.run(ctx, d.line(LogsArgs(container, tail, follow, since)), c)
}

// Cleanup prunes what the mode allows.
func (d *Docker) Cleanup(ctx context.Context, mode string) (DockerResult, error) {
	return d.run(ctx, d.cleanupLine(mode), call{Timeout: dockerLong})
}

func (d *Docker) cleanupLine(mode string) string {
	var lines []string
	for _, args := range CleanupArgs(mode) {
		lines = append(lines, d.line(args))
	}
	return strings.Join(lines, " && ")
}
