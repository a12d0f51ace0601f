package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/coded"
)

// Server is what the sbf-server binary adds to the command line: the MCP
// server's commands (sbf mcp, sbf serve) and compose loading in process.
// sbf links neither, so its own start stays cheap; it runs sbf-server for
// them.
type Server struct {
	Commands func(a *App) []*cobra.Command
	Compose  func(context.Context, guest.LoadOptions) (*guest.Project, error)
}

// ServerBinary names the binary that serves MCP and loads compose files.
const ServerBinary = "sbf-server"

// serverCommands are the MCP server's commands: sbf-server's own, or in
// sbf stand-ins that hand the whole command line to sbf-server.
func (a *app) serverCommands() []*cobra.Command {
	if a.server != nil && a.server.Commands != nil {
		return a.server.Commands((*App)(a))
	}
	var out []*cobra.Command
	for _, c := range []struct{ use, short string }{
		{"mcp", "Serve the MCP tools over stdio (and Streamable HTTP with --http)"},
		{"serve [ADDR]", "Run the reconcile loop and serve MCP over Streamable HTTP"},
	} {
		out = append(out, &cobra.Command{Use: c.use, Short: c.short, DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, list []string) error { return a.handOff(cmd.Name(), list) }})
	}
	return out
}

// handOff runs sbf-server with this command line, on this process's
// standard streams and environment, and ends with its exit code.
func (a *app) handOff(name string, list []string) error {
	bin, err := a.serverBinary()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, append([]string{"-C", a.dir, name}, list...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = a.stdin, a.stdout, a.stderr, os.Environ()
	// The parent-death signal follows the thread that started the child:
	// it stays this goroutine's until the child ends.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	endWithParent(cmd)
	stop := forwardSignals(cmd)
	defer stop()
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return silentExit(ee.ExitCode())
	}
	return err
}

// serverBinary finds sbf-server: $SBF_SERVER, beside this executable, or
// on PATH.
func (a *app) serverBinary() (string, error) {
	if p := a.getenv("SBF_SERVER"); p != "" {
		if !fileExists(p) {
			return "", coded.New(coded.BackendUnavailable, map[string]any{"binary": p},
				"SBF_SERVER=%s names no file: point it at sbf-server, or unset it to use the one beside sbf", p)
		}
		return p, nil
	}
	name := ServerBinary
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), name); fileExists(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", coded.New(coded.BackendUnavailable, map[string]any{"binary": name},
		"%s was not found beside sbf nor on PATH: it serves MCP and loads compose files for sbf; install it "+
			"from the same release archive (or go install github.com/sandboxforge/sbf/cmd/...), or set SBF_SERVER",
		name)
}

func fileExists(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir()
}

// composeLoader is how this process loads compose files: in process in
// sbf-server, through `sbf-server compose-load` in sbf.
func (a *app) composeLoader() func(context.Context, guest.LoadOptions) (*guest.Project, error) {
	if a.server != nil && a.server.Compose != nil {
		return a.server.Compose
	}
	return a.composeThroughServer
}

// composeAnswer is what `compose-load` prints.
type composeAnswer struct {
	Project *guest.Project `json:"project,omitempty"`
	File    string         `json:"file,omitempty"` // the file a ProjectError names
	Error   string         `json:"error,omitempty"`
}

func (a *app) composeThroughServer(ctx context.Context, o guest.LoadOptions) (*guest.Project, error) {
	bin, err := a.serverBinary()
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "compose-load")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("loading compose files with %s: %w: %s", bin, err, errb.String())
	}
	var ans composeAnswer
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		return nil, fmt.Errorf("loading compose files with %s: %w", bin, err)
	}
	if ans.Error != "" {
		if ans.File != "" {
			return nil, &guest.ProjectError{File: ans.File, Err: errors.New(ans.Error)}
		}
		return nil, errors.New(ans.Error)
	}
	return ans.Project, nil
}

// composeLoadCommand is `sbf-server compose-load`: LoadOptions as JSON on
// stdin, the project (or why it does not load) as JSON on stdout.
func (a *app) composeLoadCommand() *cobra.Command {
	return &cobra.Command{Use: "compose-load", Hidden: true, Args: args(cobra.NoArgs),
		Short: "Load a sandbox's compose files (sbf-server's service to sbf)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.server == nil || a.server.Compose == nil {
				return fmt.Errorf("compose-load is %s's", ServerBinary)
			}
			var o guest.LoadOptions
			if err := json.NewDecoder(io.LimitReader(a.stdin, 16<<20)).Decode(&o); err != nil {
				return fmt.Errorf("reading the load options: %w", err)
			}
			p, err := a.server.Compose(cmd.Context(), o)
			ans := composeAnswer{Project: p}
			if err != nil {
				ans.Error = err.Error()
				var pe *guest.ProjectError
				if errors.As(err, &pe) {
					ans.File, ans.Error = pe.File, pe.Err.Error()
				}
			}
			return json.NewEncoder(a.stdout).Encode(ans)
		}}
}

// DefaultHTTPAddr is where `sbf serve` and `sbf mcp --http` listen unless
// told otherwise.
const DefaultHTTPAddr = "127.0.0.1:8765"

// forwardSignals passes the interrupts this process gets to cmd's, so a
// Ctrl-C or a service manager's stop reaches sbf-server; stop ends that.
func forwardSignals(cmd *exec.Cmd) (stop func()) {
	got := make(chan os.Signal, 4)
	signal.Notify(got, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-got:
				if cmd.Process != nil && cmd.Process.Signal(sig) != nil {
					cmd.Process.Kill() // a platform that cannot pass it on
				}
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(got); close(done) }
}
