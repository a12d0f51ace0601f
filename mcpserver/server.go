// Package mcpserver exposes sbf's engine as MCP tools. Tools only edit the
// desired state (leases and ad-hoc sandboxes in a workspace's managed
// overrides) and ask the engine to converge; none drives a backend
// directly. Every tool of SandboxForge v1's server keeps its name,
// parameters, result fields and error codes.
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Config is what a server is built from; cmd/ fills it from flags and the
// environment.
type Config struct {
	Engine      *reconcile.Engine
	Settings    Settings
	Host        spec.Host
	ConfigHome  string
	DefaultRoot string // workspace for declarative tools called without one
	Version     string
	// Policy is the operator's: the workspaces this server serves, the
	// host folders besides each workspace that copy, sync and artifact
	// tools may use (--allow-path, SBF_ALLOWED_PATHS).
	Policy policy.Policy
}

// Server is one MCP server over one engine.
type Server struct {
	cfg   Config
	index *state.HostIndex
	mcp   *server.MCPServer

	mu       sync.Mutex
	touched  map[string]bool // workspace roots the loop converges
	wake     chan struct{}
	sessions atomic.Int64 // registered client sessions (HTTP and stdio)
	roots    clientRoots
	used     lastUse
	logs     loopLog      // logging.go: who hears what the loop does
	subs     resourceSubs // subscriptions.go: who watches which resource

	// What the tools of issue 24 keep (agenttools.go).
	ports     portTable       // forwards expose_port opened
	announced map[string]bool // workspaces whose resources are listed
	metrics   *metrics        // what sbf serve --metrics serves
	tasks     taskTable       // calls running as MCP tasks (calltasks.go)

	execSessions *sandbox.Sessions // execsessions.go
	calls        *callSlots        // inflight.go: the tool calls at work and waiting
	listing      toolListing       // toolsets.go: the toolsets each session lists
	stdio        stdioProgress     // stdioorder.go: a call answers after its progress
}

// New builds the server and registers every tool.
func New(cfg Config) *Server {
	cfg.Host = cfg.Host.With(drivers.Linked) // what "auto" names here is the registry's word
	s := &Server{
		cfg:     cfg,
		index:   state.OpenHostIndex(cfg.Engine.HostDir),
		touched: map[string]bool{},
		wake:    make(chan struct{}, 1),
		calls:   newCallSlots(cfg.Settings.MaxToolCalls),
	}
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(context.Context, server.ClientSession) { s.sessions.Add(1) })
	hooks.AddOnUnregisterSession(func(context.Context, server.ClientSession) { s.sessions.Add(-1) })
	options := append(s.taskOptions(hooks),
		server.WithHooks(hooks),
		server.WithToolCapabilities(true), // toolsets.go: enable_toolset changes a session's list
		// resources.go: the list grows as workspaces are served; subscriptions.go: updates
		server.WithResourceCapabilities(true, true),
		server.WithRecovery(),
		server.WithInstructions(instructions(cfg))) // instructions.go
	options = append(options, s.surfaceOptions(hooks)...) // logging.go: logging, completions, prompts
	s.watchToolsets(hooks)                                // toolsets.go: what tools/list holds
	s.mcp = server.NewMCPServer("sbf", cfg.Version, options...)
	s.watchRoots()
	s.metrics = newMetrics(s) // metrics.go: what sbf serve --metrics serves
	s.execSessions = &sandbox.Sessions{Clock: s.cfg.Engine.Clock, Idle: s.cfg.Settings.ExecSessionIdle,
		Max: s.cfg.Settings.MaxExecSessions, Total: s.cfg.Settings.MaxExecSessionsTotal}
	s.registerTools() // tooltable.go
	s.registerResources()
	s.registerPrompts()
	return s
}

// Sessions is the number of client sessions the server holds state for.
func (s *Server) Sessions() int { return int(s.sessions.Load()) }

// MCP is the underlying server, for transports and in-process clients.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// touch remembers a workspace for the reconcile loop, waking the loop the
// first time so the workspace's leases are watched from then on. Later
// calls do not wake it: a tool that changes desired state converges it
// itself, and a pass per run_command would compete with the command (a
// converged pass with a compose stack asks the guest's docker for seconds).
func (s *Server) touch(r *spec.Resolved) {
	if s.remember(r) {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// remember is touch without the wake, for a call into a sandbox that holds
// a live lease: the loop watches every leased workspace already
// (WatchOptions.Leased), and a wake makes every workspace's pass due at
// once, beside the call's command. It says whether root is new to this server.
func (s *Server) remember(r *spec.Resolved) bool {
	root := r.Root
	s.mu.Lock()
	seen := s.touched[root]
	s.touched[root] = true
	s.mu.Unlock()
	if !seen {
		s.announceWorkspace(root, r.WorkspaceID)
	}
	return !seen
}

// RunLoop runs the reconcile loop over every workspace this server has
// touched, plus every workspace the host index holds a lease for (so
// leases created before a restart still expire). It returns when ctx ends.
func (s *Server) RunLoop(ctx context.Context, report func(spec.Options, *reconcile.Result, error)) error {
	o := s.watchOptions()
	o.Interval, o.Wake, o.State = s.cfg.Settings.SweepInterval, s.wake, s.metrics.loopState
	// metrics.go counts each pass first; logging.go tells the clients what it did
	o.Report = s.observed("workspace", s.logged(report))
	o.PoolReport = s.observed("pool", report) // a pool pass is reported as a pass whose actions are spares'
	return s.cfg.Engine.Watch(ctx, o)
}

// watchOptions are the workspaces the loop watches: those this server
// touched and every one holding a lease, as a request would read them.
func (s *Server) watchOptions() reconcile.WatchOptions {
	options := func(root string) (spec.Options, bool) {
		ws, err := s.options(root, nil)
		return ws, err == nil
	}
	return reconcile.WatchOptions{Leased: options, Workspaces: func() []spec.Options {
		s.mu.Lock()
		roots := slices.Sorted(maps.Keys(s.touched))
		s.mu.Unlock()
		var out []spec.Options
		for _, r := range roots {
			if ws, ok := options(r); ok {
				out = append(out, ws)
			}
		}
		return out
	}}
}

// loopWorkspaces are the workspaces the loop passes over now.
func (s *Server) loopWorkspaces() []spec.Options { return s.cfg.Engine.Watched(s.watchOptions()) }

func newInstanceID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return "inst_" + hex.EncodeToString(b[:])
}
