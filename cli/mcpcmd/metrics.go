package mcpcmd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/sandboxforge/sbf/cli"
	"github.com/sandboxforge/sbf/mcpserver"
	"github.com/sandboxforge/sbf/mcpserver/streamhttp"
)

// serveMetrics serves the server's Prometheus metrics at http://ADDR/metrics
// until stop: on loopback unless --allow-non-loopback, and with the MCP
// endpoint's bearer token and Host and Origin checks.
func (a cmds) serveMetrics(srv *mcpserver.Server, f *mcpFlags, mcp streamhttp.Options, tokenPath string) (
	stop func(), err error) {
	o := streamhttp.Options{Addr: f.metrics, AllowNonLoopback: mcp.AllowNonLoopback, Token: mcp.Token}
	if err := streamhttp.CheckListen(o); err != nil {
		return nil, cli.UsageErrorf("--metrics: %v", err)
	}
	ln, err := net.Listen("tcp", f.metrics)
	if err != nil {
		return nil, fmt.Errorf("listening on %s for metrics: %w", f.metrics, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", srv.MetricsHandler(o))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	fmt.Fprintf(a.Stderr(), "sbf: serving metrics on http://%s/metrics (every scrape needs the bearer token in %s)\n",
		ln.Addr(), tokenPath)
	return func() {
		// Called once the server is stopping: a deadline of its own, not the stopped command's.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(a.Context()), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	}, nil
}
