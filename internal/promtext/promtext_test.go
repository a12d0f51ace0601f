package promtext

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The same metrics, kept here and by client_golang (which sbf-server used
// before), read the same to a scraper: byte for byte in the text format,
// escapes, histogram buckets and order included.
func TestServesWhatClientGolangServed(t *testing.T) {
	odd := "a \"quoted\" back\\slash\nnewline"
	mine := NewVec(Counter, "x_calls_total", "Calls by tool\nand code \\ (ok).", "tool", "code")
	theirs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_calls_total",
		Help: "Calls by tool\nand code \\ (ok)."}, []string{"tool", "code"})
	mineH := NewHistogram("x_seconds", "How long.", ExponentialBuckets(0.001, 4, 10), "tool")
	theirsH := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "x_seconds", Help: "How long.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"tool"})
	mineG := NewVec(Gauge, "x_entries", "Entries.", "state")
	theirsG := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x_entries", Help: "Entries."}, []string{"state"})
	mineC := NewVec(Counter, "x_expiries_total", "Expiries.")
	theirsC := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_expiries_total", Help: "Expiries."})
	mineE := NewVec(Counter, "x_unused_total", "Never counted.", "kind")
	theirsE := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_unused_total", Help: "Never counted."},
		[]string{"kind"})
	for _, c := range []struct {
		tool, code string
		seconds    float64
	}{{"run_command", "ok", 0.0042}, {"read_file", "GUEST_PATH_NOT_FOUND", 0.001}, {odd, "ok", 3},
		{"run_command", "ok", 1e-9}, {"run_command", "ok", 1e6}} {
		mine.Add(1, c.tool, c.code)
		theirs.WithLabelValues(c.tool, c.code).Inc()
		mineH.Observe(c.seconds, c.tool)
		theirsH.WithLabelValues(c.tool).Observe(c.seconds)
	}
	mineG.Set(2.5, "running")
	theirsG.WithLabelValues("running").Set(2.5)
	mineG.Set(0, "all")
	theirsG.WithLabelValues("all").Set(0)
	kinds := NewFunc(Counter, "x_reads_total", "Reads by kind.", []string{"kind"}, func(emit func(float64, ...string)) {
		emit(7, "spec_load")
		emit(1234567890123, "archive")
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(theirs, theirsH, theirsG, theirsC, theirsE)
	for kind, v := range map[string]float64{"spec_load": 7, "archive": 1234567890123} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x_reads_total", Help: "Reads by kind.",
			ConstLabels: prometheus.Labels{"kind": kind}}, func() float64 { return v }))
	}
	want := get(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), "")
	got := get(t, Handler(mineH, kinds, mine, mineG, mineC, mineE), "")
	if got != want {
		t.Errorf("served\n%s\nclient_golang served\n%s", got, want)
	}
	gz := get(t, Handler(mine), "gzip, deflate")
	if !strings.Contains(gz, `x_calls_total{code="ok",tool="run_command"} 3`) {
		t.Errorf("gzipped, served %q", gz)
	}
}

func get(t *testing.T, h interface {
	ServeHTTP(w http.ResponseWriter, r *http.Request)
}, encoding string) string {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var body io.Reader = rec.Body
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = zr
	} else if encoding != "" {
		t.Errorf("Accept-Encoding %q: not gzipped", encoding)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	out, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
