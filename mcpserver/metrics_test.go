package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/mcpserver/streamhttp"
	"github.com/sandboxforge/sbf/reconcile"
)

// scrape reads the metrics endpoint as Prometheus would.
func scrape(t *testing.T, h http.Handler, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Host = "127.0.0.1:9100"
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parsing the metrics: %v\n%s", err, rec.Body)
	}
	return families
}

// value is a metric's value for the labels given (name=value pairs).
func value(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f, ok := families[name]
	if !ok {
		return -1
	}
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && got[labels[i]] == labels[i+1]
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// Tool calls, loop passes, expiries, sandboxes by phase and driver, and
// exposed ports are counted and served in Prometheus's text format.
func TestMetrics(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 10})["instance_id"].(string)
	f.ok("run_command", map[string]any{"instance_id": id, "command": "true"})
	f.fails("read_file", map[string]any{"instance_id": id, "path": "none"}, "GUEST_PATH_NOT_FOUND")
	f.ok("expose_port", map[string]any{"instance_id": id, "port": guestHTTP(t, "x")})
	h := f.srv.MetricsHandler(streamhttp.Options{Addr: "127.0.0.1:9100", Token: testToken})
	m := scrape(t, h, testToken)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sbf_tool_calls_total", []string{"tool", "run_command", "code", "ok"}, 1},
		{"sbf_tool_calls_total", []string{"tool", "read_file", "code", "GUEST_PATH_NOT_FOUND"}, 1},
		{"sbf_tool_call_duration_seconds", []string{"tool", "create_instance"}, 1},
		{"sbf_sandboxes", []string{"phase", "running", "driver", "sim"}, 1},
		{"sbf_exposed_ports", nil, 1},
		{"sbf_lease_expiries_total", nil, 0},
		{"sbf_reads_total", []string{"kind", "spec_load"}, float64(readcount.Now().Of(readcount.SpecLoad))},
	} {
		if got := value(m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	// A loop pass after the lease ran out expires the sandbox: a pass, an
	// expiry, and the sandbox recorded expired.
	f.clock.Advance(11 * time.Minute)
	ws, err := f.srv.options(f.root, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.srv.cfg.Engine.Apply(context.Background(), ws,
		reconcile.Options{Intent: reconcile.Reconcile{}})
	f.srv.observed("workspace", nil)(ws, res, err)
	m = scrape(t, h, testToken)
	if value(m, "sbf_lease_expiries_total") != 1 || value(m, "sbf_reconcile_passes_total", "kind", "workspace",
		"result", "ok") != 1 || value(m, "sbf_sandboxes", "phase", "expired") != 1 ||
		value(m, "sbf_reconcile_pass_duration_seconds", "kind", "workspace") != 1 {
		t.Errorf("after an expiring pass: %v", m)
	}

	// A scrape is checked as an MCP request is: the token, and a loopback
	// Host and Origin (DNS rebinding).
	for _, c := range []struct{ host, origin, auth string }{
		{"127.0.0.1:9100", "", ""},
		{"127.0.0.1:9100", "", "Bearer wrong"},
		{"rebind.example:9100", "", "Bearer " + testToken},
		{"127.0.0.1:9100", "http://rebind.example", "Bearer " + testToken},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Host = c.host
		for k, v := range map[string]string{"Origin": c.origin, "Authorization": c.auth} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized && rec.Code != http.StatusForbidden {
			t.Errorf("a scrape with Host %q, Origin %q, %q: %d", c.host, c.origin, c.auth, rec.Code)
		}
	}
}
