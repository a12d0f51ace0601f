package cli

import (
	"context"
	"errors"
	"github.com/sandboxforge/sbf/internal/proc"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/drivers/guest/composerun"
	"github.com/sandboxforge/sbf/internal/coded"
)

// Server is what the sbf-server binary adds to the command line: the MCP
// server's commands (sbf mcp, sbf serve). sbf links them not, so its own
// start stays cheap; it runs sbf-server for them. Compose files load in
// sbf-server's compose-load child whichever binary asks (composeLoader).
type Server struct {
	Commands func(a *App) []*cobra.Command
}

// ServerBinary names the binary that serves MCP and loads compose files.
const ServerBinary = "sbf-server"

// serverCommands are the MCP server's commands: sbf-server's own, or in
// sbf stand-ins that hand the whole command line to sbf-server.
func (a *app) serverCommands() []*cobra.Command {
	if a.server != nil && a.server.Commands != nil {
		return a.server.Commands((*App)(a))
	}
	return []*cobra.Command{
		a.handOffCommand("mcp", "Serve the MCP tools over stdio (and Streamable HTTP with --http)", a.serverBinary),
		a.handOffCommand("serve [ADDR]", "Run the reconcile loop and serve MCP over Streamable HTTP", a.serverBinary),
	}
}

// handOffCommand is a stand-in for a command another binary runs: it hands
// the whole command line (flags unparsed, so --help is the other binary's)
// to the program find names.
func (a *app) handOffCommand(use, short string, find func() (string, error)) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, list []string) error {
			bin, err := find()
			if err != nil {
				return err
			}
			return a.handOff(bin, cmd.Name(), list)
		}}
}

// handOff runs bin (sbf-server, or sbf for sbf-server) with this command
// line, on this process's standard streams and environment, and ends with
// its exit code. It adds nothing: a server serves what its command line
// names (a -C the user typed is in list), never the folder it was started
// in. Where it can (unix, sbf's own process), it becomes bin: an sbf parent
// that only waits held 19 MiB for nothing (issue 42.5). Otherwise (Windows,
// an sbf run in process by a test) bin is its child, ended with it.
func (a *app) handOff(bin, name string, list []string) error {
	if canExecServer && a.executable != "" {
		err := execServer(bin, append([]string{bin, name}, list...))
		return coded.New(coded.BackendUnavailable, map[string]any{"binary": bin},
			"starting %s in place of %s: %v", bin, filepath.Base(a.executable), err)
	}
	cmd := exec.Command(bin, append([]string{name}, list...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = a.stdin, a.stdout, a.stderr, os.Environ()
	// The parent-death signal follows the thread that started the child:
	// it stays this goroutine's until the child ends.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	proc.EndWithParent(cmd)
	stop := forwardSignals(cmd)
	defer stop()
	err := cmd.Run()
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
	name, p := sibling(ServerBinary)
	if p != "" {
		return p, nil
	}
	return "", coded.New(coded.BackendUnavailable, map[string]any{"binary": name},
		"%s was not found beside sbf nor on PATH: it serves MCP and loads compose files for sbf; install it "+
			"from the same release archive (or go install github.com/sandboxforge/sbf/cmd/...), or set SBF_SERVER",
		name)
}

// sbfBinary finds sbf for sbf-server, which hands it import-v1 (sbf-server
// links no SQLite): beside this executable, or on PATH.
func (a *app) sbfBinary() (string, error) {
	name, p := sibling("sbf")
	if p != "" {
		return p, nil
	}
	return "", coded.New(coded.BackendUnavailable, map[string]any{"binary": name},
		"%s was not found beside %s nor on PATH: it runs import-v1 for sbf-server; install it from the same "+
			"release archive (or go install github.com/sandboxforge/sbf/cmd/...)", name, ServerBinary)
}

// sibling is the program name (with .exe on Windows) and where it is:
// beside this executable, else on PATH, else "".
func sibling(name string) (string, string) {
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), name); fileExists(p) {
			return name, p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return name, p
	}
	return name, ""
}

func fileExists(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir()
}

// composeLoader loads compose files in sbf-server's compose-load child,
// which confines itself to the workspace before it reads them: this
// binary's own in sbf-server, the one sbf finds (serverBinary) in sbf.
// Never in this process, which can read the whole host.
func (a *app) composeLoader() func(context.Context, guest.LoadOptions) (*guest.Project, error) {
	return func(ctx context.Context, o guest.LoadOptions) (*guest.Project, error) {
		bin, err := a.loaderBinary()
		if err != nil {
			return nil, err
		}
		return composerun.Load(ctx, bin, o, a.debugf)
	}
}

func (a *app) loaderBinary() (string, error) {
	if a.server != nil {
		return os.Executable()
	}
	return a.serverBinary()
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
