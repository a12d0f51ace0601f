package mcpserver

import (
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandboxforge/sbf/internal/readcount"
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
	reg         *prometheus.Registry
	toolCalls   *prometheus.CounterVec
	toolSeconds *prometheus.HistogramVec
	passes      *prometheus.CounterVec
	loop        *prometheus.GaugeVec
	passSeconds *prometheus.HistogramVec
	expiries    prometheus.Counter

	mu     sync.Mutex
	spares map[[3]string]int // workspace id, pool, state → spares, as the last pool pass saw them
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sbf_tool_calls_total",
			Help: "MCP tool calls by tool and outcome (ok, or the error code)."}, []string{"tool", "code"}),
		toolSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sbf_tool_call_duration_seconds",
			Help: "How long MCP tool calls took.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)},
			[]string{"tool"}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sbf_reconcile_passes_total",
			Help: "Reconcile loop passes by kind (workspace, pool) and result (ok, error)."},
			[]string{"kind", "result"}),
		passSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sbf_reconcile_pass_duration_seconds",
			Help:    "How long reconcile loop passes took, from planning to their end.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)}, []string{"kind"}),
		loop: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sbf_reconcile_loop_entries",
			Help: "The reconcile loop's workspace and pool entries by state (all, running, parked on a refusal, " +
				"backing off after a failure), after its last pass."}, []string{"state"}),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{Name: "sbf_lease_expiries_total",
			Help: "Sandboxes the loop deleted because their lease ran out."}),
		spares: map[[3]string]int{},
	}
	loads := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sbf_workspace_loads_total",
		Help: "Times the engine resolved a workspace's files: at most one per request."},
		func() float64 { return float64(s.cfg.Engine.Loads()) })
	m.reg.MustRegister(m.toolCalls, m.toolSeconds, m.passes, m.passSeconds, m.loop, m.expiries, loads,
		&worldCollector{s: s, m: m})
	for _, k := range readcount.Kinds() {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sbf_reads_total",
			Help: "What the process read of the workspaces it serves, by kind (internal/readcount): a request " +
				"resolves its workspace once.", ConstLabels: prometheus.Labels{"kind": k.String()}},
			func() float64 { return float64(readcount.Now().Of(k)) }))
	}
	return m
}

// MetricsHandler serves the metrics in Prometheus's text format, behind
// the same Origin, Host and bearer token checks as the MCP endpoint of a
// server listening on o.Addr: they name the server's workspaces, pools and
// tools, which no process that merely reaches the port should read (a
// Prometheus scrape sends the token with authorization.credentials_file).
func (s *Server) MetricsHandler(o HTTPOptions) http.Handler {
	return guard(promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}), o.access())
}

// loopState sets the loop's gauges.
func (m *metrics) loopState(st reconcile.LoopState) {
	m.loop.WithLabelValues("all").Set(float64(st.Entries))
	m.loop.WithLabelValues("running").Set(float64(st.Running))
	m.loop.WithLabelValues("parked").Set(float64(st.Parked))
	m.loop.WithLabelValues("backing_off").Set(float64(st.BackingOff))
}

// toolCall counts one tool call.
func (m *metrics) toolCall(tool string, err error, took time.Duration) {
	code := "ok"
	if err != nil {
		code = asToolError(err).Code
	}
	m.toolCalls.WithLabelValues(tool, code).Inc()
	m.toolSeconds.WithLabelValues(tool).Observe(took.Seconds())
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
	m.passes.WithLabelValues(kind, result).Inc()
	if res == nil {
		return
	}
	if !res.Now.IsZero() && !now.Before(res.Now) {
		m.passSeconds.WithLabelValues(kind).Observe(now.Sub(res.Now).Seconds())
	}
	if res.Applied && res.Plan != nil {
		for _, a := range res.Plan.Actions {
			if a.Kind == plan.Expire {
				m.expiries.Inc()
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

// worldCollector reports, at each scrape, the sandboxes of the workspaces
// the server watches by phase and driver, the pools' spares, and the
// ports it forwards.
type worldCollector struct {
	s *Server
	m *metrics
}

var (
	sandboxesDesc = prometheus.NewDesc("sbf_sandboxes", "Sandboxes recorded in the served workspaces' state, "+
		"by phase and driver.", []string{"phase", "driver"}, nil)
	sparesDesc = prometheus.NewDesc("sbf_pool_spares", "Pool spares as the last pool pass saw them, by "+
		"workspace, pool and state.", []string{"workspace_id", "pool", "state"}, nil)
	portsDesc = prometheus.NewDesc("sbf_exposed_ports", "Guest ports this server forwards (expose_port).",
		nil, nil)
)

func (c *worldCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sandboxesDesc
	ch <- sparesDesc
	ch <- portsDesc
}

func (c *worldCollector) Collect(ch chan<- prometheus.Metric) {
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
		ch <- prometheus.MustNewConstMetric(sandboxesDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	c.m.mu.Lock()
	for k, n := range c.m.spares {
		ch <- prometheus.MustNewConstMetric(sparesDesc, prometheus.GaugeValue, float64(n), k[0], k[1], k[2])
	}
	c.m.mu.Unlock()
	c.s.ports.mu.Lock()
	open := 0
	for _, e := range c.s.ports.byKey {
		if !closed(e.fwd) {
			open++
		}
	}
	c.s.ports.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(portsDesc, prometheus.GaugeValue, float64(open))
}
