package main

import (
	"context"

	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
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
	ownerSeries := fs.Int("max-owner-series", 50,
		"the owners with a series of their own in the per-owner metrics; the rest are summed as owner=\""+
			otherOwners+"\"")
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
	m := counters{maxOwners: max(*ownerSeries, 0)}
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
		mux.Handle("/metrics", m.handler())
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
