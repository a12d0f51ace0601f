package mcpcmd

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/cli"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/mcpserver"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// withLoopOnly adds to `sbf serve` what running it as a service needs
// (sbf service install): the loop without the MCP server, the workspaces
// it watches, and a log file for service managers that keep no output.
func (a cmds) withLoopOnly(cmd *cobra.Command) *cobra.Command {
	var loopOnly bool
	var workspaces []string
	var logFile string
	serveMCP := cmd.RunE
	cmd.Long += "\n\n--loop-only runs the loop alone, as `sbf reconcile --watch` does, for each --workspace DIR\n" +
		"or, without one, every workspace holding a lease in this host's index (sbf service install\n" +
		"registers it as a service)."
	cmd.Flags().BoolVar(&loopOnly, "loop-only", false, "run only the reconcile loop (expiry, repair), no MCP over HTTP")
	cmd.Flags().StringArrayVar(&workspaces, "workspace", nil,
		"with --loop-only, reconcile workspace `DIR` (repeatable; default: every workspace holding a lease on this host)")
	cmd.Flags().StringVar(&logFile, "log-file", "", "append messages to `FILE`, each line timed, instead of stderr")
	cmd.RunE = func(c *cobra.Command, list []string) (err error) {
		if logFile != "" {
			log, err := openLog(logFile)
			if err != nil {
				return err
			}
			defer log.Close()
			a.SetStderr(log)
			defer func() {
				if err != nil { // the caller prints it to a stderr nobody reads
					fmt.Fprintf(log, "sbf: %v\n", err)
				}
			}()
		}
		if !loopOnly {
			if len(workspaces) > 0 {
				return cli.UsageErrorf("--workspace needs --loop-only: the MCP server's loop watches every workspace " +
					"holding a lease and those its tools touch")
			}
			return serveMCP(c, list)
		}
		if len(list) > 0 {
			return cli.UsageErrorf("--loop-only serves no MCP: drop the address %s", list[0])
		}
		if c.Flags().Changed("metrics") {
			return cli.UsageErrorf("--metrics counts the MCP server's tools and loop: it needs serve without --loop-only")
		}
		return a.serveLoop(workspaces)
	}
	return cmd
}

// serveLoop is `sbf serve --loop-only`: the passes of `sbf reconcile
// --watch`, over the named workspaces or every one the host index holds
// a lease for, until SIGINT or SIGTERM.
func (a cmds) serveLoop(dirs []string) error {
	settings, err := mcpserver.ReadSettings(a.Getenv)
	if err != nil {
		return err
	}
	named, err := a.namedWorkspaces(dirs)
	if err != nil {
		return err
	}
	eng, err := a.Engine("serve --loop-only", 4, 10*time.Minute)
	if err != nil {
		return err
	}
	eng.Events = nil // the loop reports its actions itself (logPass)
	o := reconcile.WatchOptions{Workspaces: func() []spec.Options { return named }, Interval: settings.SweepInterval,
		Report: a.logPass, PoolReport: a.logPass} // a pool pass is reported as a pass whose actions are spares'
	what := strings.Join(dirs, ", ")
	if len(named) == 0 {
		o.Leased = func(root string) (spec.Options, bool) { return a.loopWorkspace(root), true }
		what = "every workspace holding a lease in " + eng.HostDir
	}
	ctx, stop := signal.NotifyContext(a.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(a.Stderr(), "sbf: reconciling %s every %s, at each lease end and when a lease changes; SIGTERM stops\n",
		what, settings.SweepInterval)
	return eng.Watch(ctx, o)
}

func (a cmds) namedWorkspaces(dirs []string) ([]spec.Options, error) {
	var out []spec.Options
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("resolving --workspace %s: %w", d, err)
		}
		if !spec.HasSpec(abs) {
			return nil, cli.UsageErrorf("--workspace %s: no %s there", d, spec.FileName)
		}
		out = append(out, a.loopWorkspace(abs))
	}
	return out, nil
}

func (a cmds) loopWorkspace(root string) spec.Options {
	return spec.Options{Root: root, Host: spec.CurrentHost(), ConfigHome: a.ConfigHome()}
}

// openLog opens --log-file for appending, each line prefixed with the time
// (a service manager's file has no timestamps of its own).
func openLog(path string) (io.WriteCloser, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the folder of --log-file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening --log-file: %w", err)
	}
	return &timedLog{f: f, atLineStart: true}, nil
}

// timedLog prefixes every line written to it with the current time.
type timedLog struct {
	mu          sync.Mutex
	f           *os.File
	atLineStart bool
}

func (l *timedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b []byte
	for _, c := range p {
		if l.atLineStart {
			b = clock.Real{}.Now().UTC().AppendFormat(b, time.RFC3339+" ") // when it was written
		}
		b = append(b, c)
		l.atLineStart = c == '\n'
	}
	if _, err := l.f.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (l *timedLog) Close() error { return l.f.Close() }
