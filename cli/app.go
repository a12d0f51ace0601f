package cli

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/reconcile"
)

// App is the command line's shared state as the server's commands
// (package cli/mcpcmd, linked only into sbf-server) see it.
type App app

func (a *App) Getenv(k string) string { return a.getenv(k) }

// Context is the command's root context (see interrupts).
func (a *App) Context() context.Context { return (*app)(a).context() }
func (a *App) Stdin() io.Reader         { return a.stdin }
func (a *App) Stdout() io.Writer        { return a.stdout }
func (a *App) Stderr() io.Writer        { return a.stderr }
func (a *App) SetStderr(w io.Writer)    { a.stderr = w }
func (a *App) Dir() string              { return a.dir }

// DirNamed says -C was given (Dir is then a folder the operator named).
func (a *App) DirNamed() bool        { return a.dirNamed }
func (a *App) ConfigHome() string    { return (*app)(a).configHome() }
func (a *App) HostDir() string       { return (*app)(a).hostDir() }
func (a *App) AllowPaths() *[]string { return &a.policyFlags.allow }
func (a *App) ServeRoots(extra []string) error {
	return (*app)(a).servedRoots(extra)
}

// Engine is the engine of a command, named in lock notes.
func (a *App) Engine(command string, parallelism int, lockTimeout time.Duration) (*reconcile.Engine, error) {
	return (*app)(a).engine(command, engineFlags{parallelism: parallelism, lockTimeout: lockTimeout})
}

// Operator is the process's operator policy.
func (a *App) Operator() (policy.Policy, error) { return (*app)(a).operator() }

// Args makes a positional-argument rule's failures usage errors (exit 2).
func Args(rule cobra.PositionalArgs) cobra.PositionalArgs { return args(rule) }

// UsageErrorf is a usage error: exit 2, with the help hint.
func UsageErrorf(format string, a ...any) error { return usageErrorf(format, a...) }

// Version is this build's version string.
func Version() string { return version }
