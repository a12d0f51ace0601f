// Package promtext keeps a few Prometheus metrics and serves them in
// Prometheus's text exposition format (version 0.0.4), which every
// Prometheus scrapes. It replaces client_golang in sbf-server: that
// library, its protobuf and expfmt were 2.4 MiB of the binary's pages,
// which every server process maps (issue 42), for a dozen metrics.
package promtext

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Kind is a metric family's TYPE.
type Kind string

const (
	Counter   Kind = "counter"
	Gauge     Kind = "gauge"
	Histogram Kind = "histogram"
)

// ContentType is the text format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Family is one metric name with its help, type and series.
type Family interface {
	Name() string
	write(w *bufio.Writer)
}

// Vec is a family whose series are kept as they change: counted, set or
// observed, by label values.
type Vec struct {
	name, help string
	kind       Kind
	labels     labelOrder
	buckets    []float64 // a histogram's upper bounds, ascending

	mu     sync.Mutex
	series map[string]*series // by label values joined with \xff
}

type series struct {
	values []string
	value  float64  // a counter's or gauge's; a histogram's sum
	counts []uint64 // a histogram's, per bucket (not cumulative)
	count  uint64
}

// NewVec is a counter or gauge family with these label names; one without
// labels shows its single series (0) before anything counted it.
func NewVec(kind Kind, name, help string, labels ...string) *Vec {
	v := &Vec{name: name, help: help, kind: kind, labels: sortLabels(labels), series: map[string]*series{}}
	if len(labels) == 0 {
		v.at(nil)
	}
	return v
}

// NewHistogram is a histogram family with these upper bounds (+Inf is
// added).
func NewHistogram(name, help string, buckets []float64, labels ...string) *Vec {
	v := NewVec(Histogram, name, help, labels...)
	v.buckets = buckets
	return v
}

// ExponentialBuckets are count bounds: start, start×factor, …
func ExponentialBuckets(start, factor float64, count int) []float64 {
	out := make([]float64, count)
	for i := range out {
		out[i] = start * math.Pow(factor, float64(i))
	}
	return out
}

func (v *Vec) Name() string { return v.name }

// at is the series of these label values, made on first use (v.mu held,
// or v not yet shared).
func (v *Vec) at(values []string) *series {
	values = v.labels.of(v.name, values)
	key := strings.Join(values, "\xff")
	s := v.series[key]
	if s == nil {
		s = &series{values: values}
		if v.kind == Histogram {
			s.counts = make([]uint64, len(v.buckets))
		}
		v.series[key] = s
	}
	return s
}

// Add adds x to a counter (or gauge).
func (v *Vec) Add(x float64, values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.at(values).value += x
}

// Set sets a gauge.
func (v *Vec) Set(x float64, values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.at(values).value = x
}

// Observe counts one value in a histogram.
func (v *Vec) Observe(x float64, values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.at(values)
	if i, _ := slices.BinarySearch(v.buckets, x); i < len(v.buckets) {
		s.counts[i]++
	}
	s.value += x
	s.count++
}

func (v *Vec) write(w *bufio.Writer) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.series) == 0 {
		return // as client_golang: a family without series is not shown
	}
	header(w, v.name, v.help, v.kind)
	keys := make([]string, 0, len(v.series))
	for k := range v.series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s := v.series[k]
		if v.kind != Histogram {
			sample(w, v.name, v.labels.names, s.values, s.value)
			continue
		}
		labels, values := append(slices.Clone(v.labels.names), "le"), append(slices.Clone(s.values), "")
		var cumulative uint64
		for i, le := range v.buckets {
			cumulative += s.counts[i]
			values[len(values)-1] = formatFloat(le)
			sample(w, v.name+"_bucket", labels, values, float64(cumulative))
		}
		values[len(values)-1] = "+Inf"
		sample(w, v.name+"_bucket", labels, values, float64(s.count))
		sample(w, v.name+"_sum", v.labels.names, s.values, s.value)
		sample(w, v.name+"_count", v.labels.names, s.values, float64(s.count))
	}
}

// Func is a family read at each scrape: collect emits its series.
type Func struct {
	name, help string
	kind       Kind
	labels     labelOrder
	collect    func(emit func(value float64, labelValues ...string))
}

// NewFunc is a counter or gauge family read at each scrape.
func NewFunc(kind Kind, name, help string, labels []string,
	collect func(emit func(value float64, labelValues ...string))) *Func {
	return &Func{name: name, help: help, kind: kind, labels: sortLabels(labels), collect: collect}
}

func (f *Func) Name() string { return f.name }

func (f *Func) write(w *bufio.Writer) {
	type row struct {
		values []string
		value  float64
	}
	var rows []row
	f.collect(func(value float64, values ...string) { rows = append(rows, row{f.labels.of(f.name, values), value}) })
	if len(rows) == 0 {
		return
	}
	slices.SortFunc(rows, func(a, b row) int { return slices.Compare(a.values, b.values) })
	header(w, f.name, f.help, f.kind)
	for _, r := range rows {
		sample(w, f.name, f.labels.names, r.values, r.value)
	}
}

// labelOrder is a family's label names sorted, as client_golang shows
// them, and where each comes from in the order they were declared (and
// values are given).
type labelOrder struct {
	names []string
	from  []int
}

func sortLabels(declared []string) labelOrder {
	from := make([]int, len(declared))
	for i := range from {
		from[i] = i
	}
	slices.SortFunc(from, func(a, b int) int { return strings.Compare(declared[a], declared[b]) })
	o := labelOrder{from: from}
	for _, i := range from {
		o.names = append(o.names, declared[i])
	}
	return o
}

// of is values, given in declared order, in sorted order.
func (o labelOrder) of(metric string, values []string) []string {
	if len(values) != len(o.from) {
		panic(fmt.Sprintf("metric %s has labels %v, given %v", metric, o.names, values))
	}
	out := make([]string, len(values))
	for i, j := range o.from {
		out[i] = values[j]
	}
	return out
}

// Handler serves the families, sorted by name, gzipped when the scraper
// accepts it (as Prometheus does).
func Handler(families ...Family) http.Handler {
	sorted := slices.SortedFunc(slices.Values(families), func(a, b Family) int {
		return strings.Compare(a.Name(), b.Name())
	})
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", ContentType)
		var out io.Writer = rw
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			rw.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(rw)
			defer gz.Close()
			out = gz
		}
		w := bufio.NewWriter(out)
		for _, f := range sorted {
			f.write(w)
		}
		w.Flush()
	})
}

func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

func header(w *bufio.Writer, name, help string, kind Kind) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, helpEscaper.Replace(help), name, kind)
}

func sample(w *bufio.Writer, name string, labels, values []string, value float64) {
	w.WriteString(name)
	if len(labels) > 0 {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, `%s="%s"`, l, valueEscaper.Replace(values[i]))
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(value))
	w.WriteByte('\n')
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// formatFloat writes a value as Prometheus's text format does.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
