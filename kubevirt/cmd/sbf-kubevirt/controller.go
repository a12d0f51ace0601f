package main

import (
	"context"

	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/expiry"
	"github.com/sandboxforge/sbf/kubevirt/leader"
)

// controller enforces every sbf VM's lease in the cluster (package expiry):
// `sbf-kubevirt controller [--namespaces a,b]`. It is its own command, not a mode of sbf's
// workspace loop, because it needs neither a workspace folder nor sbf: the annotation is
// all it reads. Run it under serve-leader so one replica acts.
func controller(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	namespaces := fs.String("namespaces", os.Getenv("SBF_KUBEVIRT_NAMESPACES"),
		"comma-separated namespaces to serve (default $SBF_KUBEVIRT_NAMESPACES; empty: every namespace)")
	resync := fs.Duration("resync", time.Minute, "a full pass at least this often, whatever the watch says")
	metrics := fs.String("metrics-addr", "", "serve Prometheus text metrics on this address (e.g. :9090)")
	retry := fs.Duration("retry", 5*time.Second, "the wait after a failed pass")
	grace := fs.Duration("unleased-grace", 15*time.Minute,
		"delete an sbf VM that carries no lease end this long after its creation")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, _, err := driver.RESTConfig(os.Getenv)
	if err != nil {
		return err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: driver.Scheme()})
	if err != nil {
		return err
	}
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "sbf-kubevirt controller: "+f+"\n", a...) }
	// Under serve-leader, every deletion first proves this replica still holds the Lease: a
	// supervisor frozen past its renew deadline cannot stop this process in time.
	fence, err := leader.FenceFromEnv(cfg, os.Getenv)
	if err != nil {
		return err
	}
	var mayAct func(context.Context) error
	identity, _ := os.Hostname()
	if fence != nil {
		mayAct, identity = fence.Check, fence.Identity
	}
	var m counters
	o := expiry.Options{Client: c, Namespaces: splitComma(*namespaces), Clock: clock.Real{}, Resync: *resync,
		Retry: *retry, UnleasedGrace: *grace, MayAct: mayAct, Identity: identity, Logf: logf, OnPass: m.record}
	ctrl, err := expiry.New(o)
	if err != nil {
		return err
	}
	if *metrics != "" {
		ln, err := net.Listen("tcp", *metrics)
		if err != nil {
			return fmt.Errorf("--metrics-addr %s: %w", *metrics, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", &m)
		mux.HandleFunc("/healthz", m.healthz)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
	}
	logf("serving %s: deleting sbf VMs past their lease end, or with none %s after their creation",
		describe(o.Namespaces), *grace)
	return ctrl.Run(ctx)
}

func describe(namespaces []string) string {
	if len(namespaces) == 0 {
		return "every namespace"
	}
	return "namespaces " + strings.Join(namespaces, ", ")
}

func splitComma(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// counters are the controller's metrics, in Prometheus' text format (no client library:
// four numbers do not warrant one).
type counters struct {
	mu                      sync.Mutex
	passes, expired, failed int
	unleased, overCeiling   int
	failing                 int   // passes failed in a row
	lastErr                 error // the last pass's failure
	garbled, watched        int
	lastPass                time.Time
}

func (m *counters) record(r expiry.Report) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.passes++
	m.expired += len(r.Expired)
	m.unleased += len(r.Unleased)
	m.overCeiling += len(r.OverCeiling)
	m.lastErr = r.Err
	if r.Err != nil {
		m.failed++
		m.failing++
	} else {
		m.failing = 0
	}
	m.garbled, m.watched, m.lastPass = len(r.Garbled), r.Watched, r.At
}

// failingPasses is how many passes in a row must fail before /healthz says so: one may fail
// on a conflict or a dropped connection and the next heal it.
const failingPasses = 3

// healthz fails while the controller's passes fail (RBAC taken away, KubeVirt's CRDs gone, a
// fence it cannot pass): serve-leader's probes ask it (--command-health), so the kubelet
// sees a controller that enforces nothing.
func (m *counters) healthz(w http.ResponseWriter, _ *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failing >= failingPasses {
		http.Error(w, fmt.Sprintf("the last %d passes failed: %v", m.failing, m.lastErr), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, "ok: %d passes, %d failed in a row\n", m.passes, m.failing)
}

func (m *counters) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# TYPE sbf_expiry_passes_total counter\nsbf_expiry_passes_total %d\n", m.passes)
	fmt.Fprintf(w, "# TYPE sbf_expiry_failed_passes_total counter\nsbf_expiry_failed_passes_total %d\n", m.failed)
	fmt.Fprintf(w, "# TYPE sbf_expiry_expired_total counter\nsbf_expiry_expired_total %d\n", m.expired)
	fmt.Fprintf(w, "# TYPE sbf_expiry_unleased_total counter\nsbf_expiry_unleased_total %d\n", m.unleased)
	fmt.Fprintf(w, "# TYPE sbf_expiry_over_ceiling_total counter\nsbf_expiry_over_ceiling_total %d\n", m.overCeiling)
	fmt.Fprintf(w, "# TYPE sbf_expiry_garbled_vms gauge\nsbf_expiry_garbled_vms %d\n", m.garbled)
	fmt.Fprintf(w, "# TYPE sbf_expiry_leased_vms gauge\nsbf_expiry_leased_vms %d\n", m.watched)
	if !m.lastPass.IsZero() {
		fmt.Fprintf(w, "# TYPE sbf_expiry_last_pass_seconds gauge\nsbf_expiry_last_pass_seconds %d\n",
			m.lastPass.Unix())
	}
}
