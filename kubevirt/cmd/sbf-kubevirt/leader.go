package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/leader"
)

// serveLeader runs COMMAND (sbf reconcile --watch …) only while this replica holds the
// Lease: `sbf-kubevirt serve-leader [flags] -- COMMAND [ARGS...]`.
func serveLeader(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve-leader", flag.ContinueOnError)
	host, _ := os.Hostname()
	o := leader.Options{Stdout: os.Stdout, Stderr: os.Stderr, Logf: func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "sbf-kubevirt: "+f+"\n", a...)
	}}
	fs.StringVar(&o.Namespace, "namespace", firstSet(os.Getenv("POD_NAMESPACE"), os.Getenv("SBF_KUBEVIRT_NAMESPACE"),
		driver.ContextNamespace(os.Getenv)),
		"the Lease's namespace (default $POD_NAMESPACE, else $SBF_KUBEVIRT_NAMESPACE, else the kubeconfig context's)")
	fs.StringVar(&o.Lease, "lease", "sbf-loop", "the Lease's name")
	fs.StringVar(&o.Identity, "identity", firstSet(os.Getenv("POD_NAME"), host),
		"this replica's name (default $POD_NAME, else the host name)")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", 15*time.Second, "how long a Lease not renewed stays held")
	fs.DurationVar(&o.RenewDeadline, "renew-deadline", 10*time.Second,
		"how long the leader tries to renew before it stops acting")
	fs.DurationVar(&o.RetryPeriod, "retry-period", 2*time.Second, "how often replicas try to acquire or renew")
	fs.DurationVar(&o.Grace, "grace", 0,
		"SIGTERM to SIGKILL of the command (default half of lease-duration - renew-deadline)")
	health := fs.String("health-addr", "", "answer liveness and readiness probes on this address (e.g. :8081)")
	commandHealth := fs.String("command-health", "",
		"a URL of the command's own health (e.g. http://127.0.0.1:9090/healthz): the probes fail while it does")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Command = fs.Args()
	if len(o.Command) == 0 {
		return errors.New("serve-leader: no command after the flags (serve-leader [flags] -- sbf reconcile --watch ...)")
	}
	cfg, _, err := driver.RESTConfig(os.Getenv)
	if err != nil {
		return err
	}
	o.Config = cfg
	if *health != "" {
		ln, err := net.Listen("tcp", *health)
		if err != nil {
			return fmt.Errorf("--health-addr %s: %w", *health, err)
		}
		srv := &http.Server{Handler: probes(*commandHealth), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
	}
	return leader.Run(ctx, o)
}

// probes answers /healthz and /readyz while the election runs: a follower is as healthy as
// the leader (it is what takes over), so both are ready; a replica whose election ended
// exits, and the kubelet restarts it. With commandHealth, the leader's probes also fail
// while its command says it fails (a controller whose every pass fails enforces nothing);
// nothing listening there is no command running here (a follower): ok.
func probes(commandHealth string) http.Handler {
	mux := http.NewServeMux()
	hc := &http.Client{Timeout: 2 * time.Second}
	ok := func(w http.ResponseWriter, r *http.Request) {
		if commandHealth != "" {
			res, err := hc.Get(commandHealth)
			switch {
			case err != nil && !errors.Is(err, syscall.ECONNREFUSED):
				http.Error(w, "the command's health does not answer: "+err.Error(), http.StatusServiceUnavailable)
				return
			case err == nil:
				body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					http.Error(w, "the command fails: "+strings.TrimSpace(string(body)), http.StatusServiceUnavailable)
					return
				}
			}
		}
		fmt.Fprintln(w, "ok")
	}
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/readyz", ok)
	return mux
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
