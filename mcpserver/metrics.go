package mcpserver

import (
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/promtext"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/mcpserver/streamhttp"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// metrics are the server's Prometheus metrics (`sbf serve --metrics
// ADDR`): what its tools and its reconcile loop did, counted as they
// happen, and what its workspaces hold, read from their state files at
// each scrape.
type metrics struct {
	families    []promtext.Family
	toolCalls   *promtext.Vec
	toolSeconds *promtext.Vec
	passes      *promtext.Vec
	loop        *promtext.Vec
	passSeconds *promtext.Vec
	expiries    *promtext.Vec

	mu     sync.Mutex
	spares map[[3]string]int // workspace id, pool, state → spares, as the last pool pass saw them
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		toolCalls: promtext.NewVec(promtext.Counter, "sbf_tool_calls_total",
			"MCP tool calls by tool and outcome (ok, or the error code).", "tool", "code"),
		toolSeconds: promtext.NewHistogram("sbf_tool_call_duration_seconds", "How long MCP tool calls took.",
			promtext.ExponentialBuckets(0.001, 4, 10), "tool"),
		passes: promtext.NewVec(promtext.Counter, "sbf_reconcile_passes_total",
			"Reconcile loop passes by kind (workspace, pool) and result (ok, error).", "kind", "result"),
		passSeconds: promtext.NewHistogram("sbf_reconcile_pass_duration_seconds",
			"How long reconcile loop passes took, from planning to their end.",
			promtext.ExponentialBuckets(0.01, 4, 10), "kind"),
		loop: promtext.NewVec(promtext.Gauge, "sbf_reconcile_loop_entries",
			"The reconcile loop's workspace and pool entries by state (all, running, parked on a refusal, "+
				"backing off after a failure), after its last pass.", "state"),
		expiries: promtext.NewVec(promtext.Counter, "sbf_lease_expiries_total",
			"Sandboxes the loop deleted because their lease ran out."),
		spares: map[[3]string]int{},
	}
	loads := promtext.NewFunc(promtext.Counter, "sbf_workspace_loads_total",
		"Times the engine resolved a workspace's files: at most one per request.", nil,
		func(emit func(float64, ...string)) { emit(float64(s.cfg.Engine.Loads())) })
	reads := promtext.NewFunc(promtext.Counter, "sbf_reads_total", "What the process read of the workspaces it "+
		"serves, by kind (internal/readcount): a request resolves its workspace once.", []string{"kind"},
		func(emit func(float64, ...string)) {
			now := readcount.Now()
			for _, k := range readcount.Kinds() {
				emit(float64(now.Of(k)), k.String())
			}
		})
	w := &worldCollector{s: s, m: m}
	m.families = []promtext.Family{m.toolCalls, m.toolSeconds, m.passes, m.passSeconds, m.loop, m.expiries, loads,
		reads, promtext.NewFunc(promtext.Gauge, "sbf_sandboxes", "Sandboxes recorded in the served workspaces' "+
			"state, by phase and driver.", []string{"phase", "driver"}, w.sandboxes),
		promtext.NewFunc(promtext.Gauge, "sbf_pool_spares", "Pool spares as the last pool pass saw them, by "+
			"workspace, pool and state.", []string{"workspace_id", "pool", "state"}, w.spares),
		promtext.NewFunc(promtext.Gauge, "sbf_exposed_ports", "Guest ports this server forwards (expose_port).",
			nil, w.ports)}
	return m
}

// MetricsHandler serves the metrics in Prometheus's text format, behind
// the same Origin, Host and bearer token checks as the MCP endpoint of a
// server listening on o.Addr: they name the server's workspaces, pools and
// tools, which no process that merely reaches the port should read (a
// Prometheus scrape sends the token with authorization.credentials_file).
func (s *Server) MetricsHandler(o streamhttp.Options) http.Handler {
	return streamhttp.Guard(promtext.Handler(s.metrics.families...), o)
}

// loopState sets the loop's gauges.
func (m *metrics) loopState(st reconcile.LoopState) {
	m.loop.Set(float64(st.Entries), "all")
	m.loop.Set(float64(st.Running), "running")
	m.loop.Set(float64(st.Parked), "parked")
	m.loop.Set(float64(st.BackingOff), "backing_off")
}

// toolCall counts one tool call.
func (m *metrics) toolCall(tool string, err error, took time.Duration) {
	code := "ok"
	if err != nil {
		code = asToolError(err).Code
	}
	m.toolCalls.Add(1, tool, code)
	m.toolSeconds.Observe(took.Seconds(), tool)
}

// observed wraps a loop report so each pass is counted first.
func (s *Server) observed(kind string, report func(spec.Options, *reconcile.Result, error)) func(spec.Options,
	*reconcile.Result, error) {
	return func(ws spec.Options, res *reconcile.Result, err error) {
		s.metrics.pass(kind, res, err, s.cfg.Engine.Clock.Now())
		if report != nil {
			report(ws, res, err)
		}
	}
}

func (m *metrics) pass(kind string, res *reconcile.Result, err error, now time.Time) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.passes.Add(1, kind, result)
	if res == nil {
		return
	}
	if !res.Now.IsZero() && !now.Before(res.Now) {
		m.passSeconds.Observe(now.Sub(res.Now).Seconds(), kind)
	}
	if res.Applied && res.Plan != nil {
		for _, a := range res.Plan.Actions {
			if a.Kind == plan.Expire {
				m.expiries.Add(1)
			}
		}
	}
	if kind == "pool" && res.Resolved != nil {
		m.noteSpares(res.Resolved.WorkspaceID, res.PoolsReport())
	}
}

// noteSpares keeps a workspace's spares by pool and state.
func (m *metrics) noteSpares(wsID string, r reconcile.PoolsReport) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.spares {
		if k[0] == wsID {
			delete(m.spares, k)
		}
	}
	for _, p := range r.Pools {
		for _, sp := range p.Spares {
			m.spares[[3]string{wsID, p.Name, sp.State}]++
		}
	}
}

// worldCollector reads, at each scrape, the sandboxes of the workspaces
// the server watches by phase and driver, the pools' spares, and the
// ports it forwards.
type worldCollector struct {
	s *Server
	m *metrics
}

func (c *worldCollector) sandboxes(emit func(float64, ...string)) {
	counts := map[[2]string]int{}
	for _, ws := range c.s.loopWorkspaces() {
		root, id, err := spec.WorkspaceIdentity(ws.Root)
		if err != nil {
			continue
		}
		f, err := state.Read(filepath.Join(root, spec.Dir), root, id)
		if err != nil {
			continue
		}
		for _, rec := range f.Sandboxes {
			counts[[2]string{string(rec.Phase), rec.Driver}]++
		}
	}
	for k, n := range counts {
		emit(float64(n), k[0], k[1])
	}
}

func (c *worldCollector) spares(emit func(float64, ...string)) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for k, n := range c.m.spares {
		emit(float64(n), k[0], k[1], k[2])
	}
}

func (c *worldCollector) ports(emit func(float64, ...string)) {
	c.s.ports.mu.Lock()
	defer c.s.ports.mu.Unlock()
	open := 0
	for _, e := range c.s.ports.byKey {
		if !closed(e.fwd) {
			open++
		}
	}
	emit(float64(open))
}
