package mcpcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/cli"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/mcptoken"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/proc"
	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/mcpserver"
	"github.com/sandboxforge/sbf/mcpserver/streamhttp"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

type mcpFlags struct {
	http             string
	allowNonLoopback bool
	tokenFile        string
	maxBodyBytes     int64
	maxSessions      int
	sessionIdle      time.Duration
	workspaceRoots   []string
	metrics          string // metrics.go
	toolsets         string
}

func (f *mcpFlags) register(a cmds, cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(a.AllowPaths(), "allow-path", nil,
		"host `DIR` that copy, sync and artifact tools may use besides each instance's workspace "+
			"(repeatable; also SBF_ALLOWED_PATHS)")
	cmd.Flags().StringArrayVar(&f.workspaceRoots, "workspace-root", nil,
		"serve the workspaces in `DIR` and below it, besides -C's (repeatable; also SBF_WORKSPACE_ROOTS); "+
			"a client's MCP roots narrow them further")
	cmd.Flags().
		BoolVar(&f.allowNonLoopback, "allow-non-loopback", false, "allow listening off loopback (requires --token-file)")
	cmd.Flags().StringVar(&f.tokenFile, "token-file", "", "the bearer token every HTTP request must carry is "+
		"`FILE`'s content: one token of at least 128 bits (32 hex digits), in a file only its owner may read "+
		"(default: one sbf generates per address and served roots in its state folder)")
	cmd.Flags().StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics "+
		"(loopback and the bearer token, as the MCP endpoint)")
	cmd.Flags().Int64Var(&f.maxBodyBytes, "max-body-bytes", 0,
		fmt.Sprintf("largest HTTP request body in bytes (default %d, or "+
			"MCP_HTTP_MAX_BODY_BYTES)", streamhttp.DefaultMaxBodyBytes),
	)
	cmd.Flags().IntVar(&f.maxSessions, "max-sessions", 0,
		fmt.Sprintf("most live HTTP sessions; the longest idle is ended first (default %d, or "+
			"MCP_HTTP_MAX_SESSIONS)", streamhttp.DefaultMaxSessions),
	)
	cmd.Flags().StringVar(&f.toolsets, "toolsets", "", "the toolsets tools/list holds: `NAMES` separated by "+
		"commas, each all, default (core and every v1 tool) or one of "+strings.Join(mcpserver.ToolsetNames(), ", ")+
		" (default: SBF_TOOLSETS, else default); a client lists more with enable_toolset")
	cmd.Flags().DurationVar(&f.sessionIdle, "session-idle", 0,
		fmt.Sprintf("end HTTP sessions idle this long (default %s, or "+
			"MCP_HTTP_SESSION_IDLE_SECONDS)", streamhttp.DefaultSessionIdle),
	)
}

// httpOptions combines flags over the environment's settings.
func (f *mcpFlags) httpOptions(addr string, s mcpserver.Settings) streamhttp.Options {
	o := streamhttp.Options{Addr: addr, AllowNonLoopback: f.allowNonLoopback || s.AllowRemote,
		MaxBodyBytes: s.MaxBodyBytes, MaxSessions: s.MaxSessions, SessionIdle: s.SessionIdle}
	if f.maxBodyBytes > 0 {
		o.MaxBodyBytes = f.maxBodyBytes
	}
	if f.maxSessions > 0 {
		o.MaxSessions = f.maxSessions
	}
	if f.sessionIdle > 0 {
		o.SessionIdle = f.sessionIdle
	}
	return o
}

func (a cmds) mcpCommand() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the MCP tools over stdio (and Streamable HTTP with --http)",
		Long: "mcp serves SandboxForge's MCP tools on stdin/stdout for an MCP client, and runs the reconcile\n" +
			"loop (expiry, repair) in the background. --http also serves Streamable HTTP at http://ADDR/mcp\n" +
			"(default 127.0.0.1:8765), where every request must carry a bearer token (--token-file, or one sbf\n" +
			"generates in its state folder; the server says where). SandboxForge v1's environment variables keep\n" +
			"their meaning.",
		// `--http ADDR` as two words: a bare --http takes the default
		// address, so the address arrives as the one argument.
		Args: cli.Args(func(cmd *cobra.Command, list []string) error {
			if len(list) == 1 && cmd.Flags().Changed("http") && f.http == cli.DefaultHTTPAddr {
				if _, _, err := net.SplitHostPort(list[0]); err == nil {
					return nil
				}
			}
			return cobra.NoArgs(cmd, list)
		}),
		RunE: func(_ *cobra.Command, list []string) error {
			if len(list) == 1 {
				f.http = list[0]
			}
			return a.serveMCP(&f, true)
		},
	}
	f.register(a, cmd)
	cmd.Flags().StringVar(&f.http, "http", "", "also serve Streamable HTTP on `ADDR` (default "+cli.DefaultHTTPAddr+")")
	cmd.Flags().Lookup("http").NoOptDefVal = cli.DefaultHTTPAddr
	return cmd
}

func (a cmds) serveCommand() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "serve [ADDR]",
		Short: "Run the reconcile loop and serve MCP over Streamable HTTP",
		Long: "serve runs the reconcile loop for every workspace it has touched (and every workspace holding\n" +
			"a lease on this host) and serves the MCP tools at http://ADDR/mcp (default MCP_HTTP_HOST:MCP_HTTP_PORT,\n" +
			"127.0.0.1:8765). Every request must carry a bearer token (Authorization: Bearer TOKEN): --token-file's,\n" +
			"or one sbf generates per address in its state folder and reuses; the server prints where it is.\n" +
			"SIGINT/SIGTERM stop it gracefully: in-flight actions finish and state is saved.",
		Args: cli.Args(cobra.MaximumNArgs(1)),
		RunE: func(_ *cobra.Command, list []string) error {
			if len(list) == 1 {
				f.http = list[0]
			}
			return a.serveMCP(&f, false)
		},
	}
	f.register(a, cmd)
	return cmd
}

func (a cmds) serveMCP(f *mcpFlags, stdio bool) error {
	settings, err := mcpserver.ReadSettings(a.Getenv)
	if err != nil {
		return err
	}
	if f.toolsets != "" {
		if settings.Toolsets, err = mcpserver.ParseToolsets(f.toolsets); err != nil {
			return coded.New(coded.InvalidArguments, map[string]any{"flag": "toolsets"}, "--toolsets: %v", err)
		}
	}
	httpAddr := f.http
	if !stdio && httpAddr == "" || stdio && httpAddr == "" && settings.EnableHTTP != nil && *settings.EnableHTTP {
		httpAddr = settings.HTTPAddr()
		for _, w := range settings.Warnings {
			fmt.Fprintf(a.Stderr(), "sbf: warning: %s\n", w)
		}
	}
	opts := f.httpOptions(httpAddr, settings)
	if stdio && httpAddr == "" {
		proc.OneP(a.Getenv) // one client, whose calls wait on guests (a server on HTTP may have many)
	}
	command := "serve"
	if stdio {
		command = "mcp"
	}
	if err := a.ServeRoots(f.workspaceRoots); err != nil {
		return err
	}
	if pol, err := a.Operator(); err != nil || len(pol.WorkspaceRoots) == 0 {
		return cmp.Or(err, errNothingServed(command)) // before any token is made for such a server
	}
	var tokenPath string
	if httpAddr != "" || f.metrics != "" {
		for _, addr := range []string{httpAddr, f.metrics} {
			check := streamhttp.Options{Addr: addr, AllowNonLoopback: opts.AllowNonLoopback}
			if err := streamhttp.CheckListen(check); addr != "" && err != nil {
				return cli.UsageErrorf("%v", err)
			}
		}
		if opts.Token, tokenPath, err = a.bearerToken(f.tokenFile, cmp.Or(httpAddr, f.metrics)); err != nil {
			return err
		}
	}
	srv, err := a.newMCPServer(settings, command)
	if err != nil {
		return err
	}
	defer srv.Close() // the ports it exposed
	if f.metrics != "" {
		stopMetrics, err := a.serveMetrics(srv, f, opts, tokenPath)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	ctx, stop := signal.NotifyContext(a.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	loopCtx, stopLoop := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		srv.RunLoop(loopCtx, a.logPass)
	}()
	var httpErr chan error
	var hs *http.Server
	if httpAddr != "" {
		ln, err := net.Listen("tcp", httpAddr)
		if err != nil {
			stopLoop()
			wg.Wait()
			return fmt.Errorf("listening on %s: %w", httpAddr, err)
		}
		handler := streamhttp.New(srv.MCP(), opts)
		defer handler.Close()
		hs = streamhttp.NewServer(handler)
		httpErr = make(chan error, 1)
		go func() { httpErr <- hs.Serve(ln) }()
		fmt.Fprintf(a.Stderr(), "sbf: serving MCP on http://%s/mcp (every request needs the bearer token in %s)\n",
			ln.Addr(), tokenPath)
	}
	if stdio {
		in, restore := polledInput(a.Stdin())
		defer restore()
		err = server.NewStdioServer(srv.MCP()).Listen(ctx, in, srv.StdioOutput(a.Stdout()))
	} else {
		select {
		case <-ctx.Done():
		case err = <-httpErr:
		}
	}
	if hs != nil {
		// The stop has cancelled ctx: the shutdown gets a deadline of its own.
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		hs.Shutdown(shutdown)
		cancel()
	}
	stopLoop()
	wg.Wait() // a pass in progress finishes and saves its state
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// newMCPServer builds the server; command ("mcp" or "serve") names the
// process in lock notes, so a waiting sbf says who it waits for.
func (a cmds) newMCPServer(settings mcpserver.Settings, command string) (*mcpserver.Server, error) {
	eng, err := a.Engine(command, 4, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	eng.Events = nil // stdout may be the protocol stream
	pol, err := a.Operator()
	if err != nil {
		return nil, err
	}
	root, err := a.defaultRoot(pol)
	if err != nil {
		return nil, err
	}
	return mcpserver.New(mcpserver.Config{
		Engine: eng, Settings: settings, Host: spec.CurrentHost(), ConfigHome: a.ConfigHome(),
		DefaultRoot: root, Version: cli.Version(), Policy: pol,
	}), nil
}

// errNothingServed refuses to start a server nobody told what to serve:
// the folder it happens to start in (a service's $HOME or /) is not a
// choice the operator made.
func errNothingServed(command string) error {
	return coded.New(coded.InvalidArguments, map[string]any{"command": command},
		"sbf %s serves only the workspaces you name, and none was named: pass -C DIR or --workspace-root DIR "+
			"(repeatable), or set SBF_WORKSPACE_ROOTS or [policy] workspace_roots in the global config", command)
}

// defaultRoot is the workspace a tool called without workspace_root uses:
// -C's when it was given, else the one served root when there is one,
// else none (such a call must name its workspace).
func (a cmds) defaultRoot(pol policy.Policy) (string, error) {
	switch {
	case a.DirNamed():
		return filepath.Abs(a.Dir())
	case len(pol.WorkspaceRoots) == 1:
		return pol.WorkspaceRoots[0], nil
	}
	return "", nil
}

// logPass reports loop passes that changed something or failed.
func (a cmds) logPass(ws spec.Options, res *reconcile.Result, err error) {
	if err != nil {
		fmt.Fprintf(a.Stderr(), "sbf: reconcile %s: %s\n", ws.Root, termsafe.Text(err.Error()))
	}
	if res != nil && res.Plan != nil && len(res.Plan.Actions) > 0 {
		for _, act := range res.Plan.Actions {
			fmt.Fprintf(a.Stderr(), "sbf: reconcile %s: %s %s (%s)\n", ws.Root, act.Kind, act.Subject(), act.Cause)
		}
	}
}

// bearerToken is the token every HTTP request must carry: --token-file's,
// or the one sbf keeps in its state folder for this server (made on first
// use): its address and the workspace roots it serves, so a token given
// out for one server never lets a client into another. It returns the file
// it came from, which the server names (never the token) so clients can
// be pointed at it.
func (a cmds) bearerToken(file, addr string) (token, path string, err error) {
	if file != "" {
		token, err = mcptoken.Read(file)
		return token, file, err
	}
	pol, err := a.Operator()
	if err != nil {
		return "", "", err
	}
	generated := mcptoken.Generated(a.HostDir(), addr, pol.WorkspaceRoots)
	token, err = mcptoken.LoadOrCreate(generated)
	return token, generated.Path(), err
}
