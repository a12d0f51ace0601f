// Package sandbox is the data plane: what runs on a sandbox the engine
// admitted (a live lease, a running VM): commands, terminals, copies and
// syncs under the operator's host-path policy, background tasks. It makes
// no decision about which sandboxes may exist; the engine (package
// reconcile) finds a Target, and this package acts on it.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/broker"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/names"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/shellquote"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Target is a running sandbox a command or copy goes to. Its driver is
// built on first use, so callers that only need the names pay nothing.
type Target struct {
	Resolved   *spec.Resolved
	Sandbox    string
	Instance   string
	DriverName string
	// Record is the sandbox's state record when the target was found
	// (nil when there was none).
	Record *state.Sandbox
	// Clock and Getenv are the process's: the data plane's "now", and the
	// environment that ${VAR} secrets are read from.
	Clock  clock.Clock
	Getenv func(string) string
	// Open builds the target's backend.
	Open func() (drivers.Driver, error)
	// Brokers, when the door has them (the CLI, whose processes are short),
	// carry the file tools' and stats' commands as they carry sbf exec's.
	Brokers Brokers
	// MaxOutput is the server's ceiling on each output stream a command's
	// result keeps (the operator's [policy] max_output_bytes): a request
	// asking more, or a guest printing more, gets this much and a count of
	// the rest. Zero: policy.DefaultMaxOutputBytes.
	MaxOutput int64
	driver    drivers.Driver
}

// Driver returns the target's backend, built once.
func (t *Target) Driver() (drivers.Driver, error) {
	if t.driver != nil {
		return t.driver, nil
	}
	d, err := t.Open()
	t.driver = d
	return d, err
}

// workspace is the root of the target's workspace ("" when unresolved).
func (t *Target) workspace() string {
	if t.Resolved == nil {
		return ""
	}
	return t.Resolved.Root
}

// Env reads the process environment (empty without one).
func (t *Target) Env(k string) string {
	if t.Getenv == nil {
		return ""
	}
	return t.Getenv(k)
}

// Exec runs a command in the target, once its VM has booted (boot.go).
func (t *Target) Exec(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
	return hideWrapper(req, func(req drivers.ExecRequest) (drivers.ExecResult, error) {
		return afterBoot(ctx, t, func() (drivers.ExecResult, error) { return t.exec(ctx, req) })
	})
}

// exec is Exec with the guest shell's own words left as they are, and no
// wait for a boot.
func (t *Target) exec(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
	req, err := withPrelude(req)
	if err != nil {
		return drivers.ExecResult{}, err
	}
	return t.ExecPrepared(ctx, req)
}

// ExecPrepared runs a request already given its prelude (an exec broker's,
// whose client gave it) on the driver, under the server's output ceiling.
func (t *Target) ExecPrepared(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
	drv, err := t.Driver()
	if err != nil {
		return drivers.ExecResult{}, err
	}
	x := drivers.CapabilitiesOf(drv).Exec
	if x == nil {
		return drivers.ExecResult{}, fmt.Errorf("the driver of sandbox %s cannot run commands", t.Sandbox)
	}
	req.MaxOutput = t.OutputLimit(req.MaxOutput)
	res, err := x.Exec(ctx, t.Instance, req)
	res.MaxOutput = req.MaxOutput
	return res, err
}

// OutputLimit is how much of each output stream a command asking to keep
// asked bytes (≤ 0: drivers.DefaultMaxOutput) keeps: never more than the
// server's ceiling, whoever asks.
func (t *Target) OutputLimit(asked int) int {
	ceiling := t.MaxOutput
	if ceiling <= 0 {
		ceiling = policy.DefaultMaxOutputBytes
	}
	if asked <= 0 {
		asked = drivers.DefaultMaxOutput
	}
	return int(min(int64(asked), ceiling, math.MaxInt32))
}

// Terminal runs an interactive command (or the login shell, for an empty
// one) on a terminal in the target, once its VM has booted, and returns
// its exit status.
func (t *Target) Terminal(ctx context.Context, req drivers.TerminalRequest) (int, error) {
	return afterBoot(ctx, t, func() (int, error) { return t.terminal(ctx, req) })
}

func (t *Target) terminal(ctx context.Context, req drivers.TerminalRequest) (int, error) {
	drv, err := t.Driver()
	if err != nil {
		return -1, err
	}
	term := drivers.CapabilitiesOf(drv).Terminal
	if term == nil {
		return -1, fmt.Errorf(
			"the %s driver of sandbox %s cannot open a terminal; run commands without -t",
			t.DriverName,
			t.Sandbox,
		)
	}
	return term.Terminal(ctx, t.Instance, req)
}

// Brokers are exec brokers: sbf processes that keep a sandbox's
// connection and guest shell warm between commands of separate sbf
// processes. The front door that can start one says where it listens and
// how to start it.
type Brokers struct {
	// Socket is where the broker of a workspace's sandbox listens: found
	// from the workspace's identity alone, so a client that has not read
	// the workspace finds it too.
	Socket func(workspaceID, sandbox string) string
	Start  func(t *Target) error
	Debug  func(format string, args ...any)
}

// brokerStartWait bounds how long a new broker may take to listen.
const brokerStartWait = 5 * time.Second

// ExecBrokered runs a command through the sandbox's exec broker when its
// driver keeps connections open (drivers.Connector) and the target has
// Brokers, starting a broker when none answers, and directly otherwise or
// when that fails; once the sandbox's VM has booted (boot.go).
func (t *Target) ExecBrokered(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
	if req.Stdin != nil {
		// A broker reads stdin as its answer comes: a command asked again
		// after a boot would miss what the first asking read. Wait first.
		if err := t.waitBooted(ctx); err != nil {
			return drivers.ExecResult{}, err
		}
	}
	return hideWrapper(req, func(req drivers.ExecRequest) (drivers.ExecResult, error) {
		return afterBoot(ctx, t, func() (drivers.ExecResult, error) { return t.execBrokered(ctx, req) })
	})
}

func (t *Target) execBrokered(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error) {
	b := t.Brokers
	brokered, err := t.keepsConnections()
	if err != nil {
		return drivers.ExecResult{}, err
	}
	if !brokered || b.Socket == nil || b.Start == nil {
		return t.exec(ctx, req)
	}
	if req, err = withPrelude(req); err != nil {
		return drivers.ExecResult{}, err
	}
	req.MaxOutput = t.OutputLimit(req.MaxOutput)
	sock := b.Socket(t.Resolved.WorkspaceID, t.Sandbox)
	res, err := broker.Exec(ctx, sock, req)
	if !errors.Is(err, broker.ErrNoBroker) {
		res.MaxOutput = req.MaxOutput
		return res, err
	}
	if err := b.Start(t); err != nil {
		b.debugf("exec broker for %s: %v; running the command directly", t.Instance, err)
		return t.exec(ctx, req)
	}
	for waited := time.Duration(0); waited < brokerStartWait; waited += 100 * time.Millisecond {
		if res, err = broker.Exec(ctx, sock, req); !errors.Is(err, broker.ErrNoBroker) {
			res.MaxOutput = req.MaxOutput
			return res, err
		}
		if err := clock.Sleep(ctx, t.Clock, 100*time.Millisecond); err != nil {
			return res, err
		}
	}
	b.debugf("exec broker for %s did not answer; running the command directly", t.Instance)
	return t.exec(ctx, req)
}

// keepsConnections says whether the target's backend keeps connections
// open (so a broker can hold one), from its registration's type when it
// has one: a command that a running broker serves need not build the
// backend.
func (t *Target) keepsConnections() (bool, error) {
	if reg, ok := drivers.Lookup(t.DriverName); ok && reg.Zero != nil {
		return drivers.CapabilitiesOf(reg.Zero).Connections != nil, nil
	}
	drv, err := t.Driver()
	if err != nil {
		return false, err
	}
	return drivers.CapabilitiesOf(drv).Connections != nil, nil
}

func (b Brokers) debugf(format string, args ...any) {
	if b.Debug != nil {
		b.Debug(format, args...)
	}
}

// withPrelude turns a request's Workdir and Env into the command's own
// `cd` and `export`s (SandboxForge v1's wrapping), every value quoted.
func withPrelude(req drivers.ExecRequest) (drivers.ExecRequest, error) {
	var pre []string
	if req.Workdir != "" {
		pre = append(pre, "cd "+shellquote.Quote(req.Workdir))
	}
	for _, k := range slices.Sorted(maps.Keys(req.Env)) {
		if !names.EnvVar(k) {
			return req, coded.New(coded.InvalidArguments, map[string]any{"field": "env", "key": k},
				"env: %q is not a variable name", k)
		}
		pre = append(pre, "export "+k+"="+shellquote.Quote(req.Env[k]))
	}
	if len(pre) > 0 {
		req.Command = strings.Join(append(pre, req.Command), " && ")
	}
	req.Workdir, req.Env = "", nil
	return req, nil
}

// WorkspacePaths are the guest folders a workspace can be copied to, as
// v1 probed them: the first writable of /workspace, /tmp/workspace and
// ~/workspace is preferred.
func (t *Target) WorkspacePaths(ctx context.Context) (preferred string, writable []string, err error) {
	res, err := t.Exec(ctx, drivers.ExecRequest{Command: `for d in /workspace /tmp/workspace "$HOME/workspace"; do ` +
		`mkdir -p "$d" 2>/dev/null && touch "$d/.sbf-probe" 2>/dev/null && rm -f "$d/.sbf-probe" && echo "$d"; done`})
	if err != nil {
		return "", nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if line != "" {
			writable = append(writable, line)
		}
	}
	preferred = "/tmp/workspace"
	if len(writable) > 0 {
		preferred = writable[0]
	}
	return preferred, writable, nil
}
