// Package cli is the sbf command line: each subcommand lives in its own
// file and stays thin (parse flags, call the engine, render). Two binaries
// run it: sbf, which starts fast because it links neither the MCP server
// nor compose-go (it hands `sbf mcp`, `sbf serve` and compose loading to
// sbf-server), and sbf-server, which links both (package cli/mcpcmd).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/sandboxforge/sbf/internal/policy"
	waits "github.com/sandboxforge/sbf/internal/progress"
	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/state"

	"github.com/spf13/cobra"

	_ "github.com/sandboxforge/sbf/drivers/all" // every backend registers itself
	"github.com/sandboxforge/sbf/internal/buildinfo"
)

// Main runs the command line of this process and returns its exit code.
// server is what sbf-server adds; nil for sbf.
func Main(server *Server) int {
	state.SbfVersion = version // every state file records the sbf that wrote it
	_, tuned := tuneCollector(server, os.Getenv)
	ctx, in := interruptible(context.Background(), os.Stderr)
	// Backends run their hidden commands (vz's VM supervisors) with this same binary.
	exe, _ := os.Executable()
	return runIn(ctx, processRoot{in, exe, tuned}, server, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
}

// processRoot is what only the process sbf runs in knows; zero when a
// command line runs in process (tests).
type processRoot struct {
	interrupts *interrupts // hears SIGINT and SIGTERM for the commands that do not themselves
	executable string      // sbf's own program (drivers.Env.Executable)
	tuned      bool        // tuneCollector changed the collector (collector.go)
}

// app is what every subcommand shares: where it reads and writes, and the
// process environment, passed in so tests can run sbf in-process.
type app struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	dir    string // -C, then the workspace root found from it
	// dirNamed says -C was given: only then is dir a folder the operator
	// named (an MCP server serves it), not merely where sbf started.
	dirNamed bool
	// startDir is where sbf acts as if started (-C DIR, else the working
	// folder), absolute: relative host paths start here.
	startDir string

	policyFlags   policyFlags
	policy        *policy.Policy // loaded once, by operator()
	server        *Server        // nil: sbf, which hands the server's work to sbf-server
	runCtx        context.Context
	interrupts    *interrupts
	stopListening func()
	executable    string         // processRoot's
	tuned         bool           // processRoot's
	closers       []func() error // the drivers a command built, closed when it ends
	polish        func()         // gives the help text its final form (polishWhenShown)
}

// context is what a command runs with: cancelled by an interrupt (see
// interrupts), and telling a run to stop starting steps at the first.
func (a *app) context() context.Context {
	if a.runCtx == nil {
		return context.Background()
	}
	return a.runCtx
}

// exitError carries an exit code other than 1 (usage errors exit 2, plan
// --detailed-exitcode exits 2 for pending changes). A nil err means the
// command already said what it had to.
type exitError struct {
	code int
	err  error
	hint bool // point at the command's --help (usage errors always do)
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// silentExit ends the command with a code and nothing more to print.
func silentExit(code int) error { return &exitError{code: code} }

// waitLines writes progress lines to w, one at a time, escaped: what
// they name may come from a guest.
func waitLines(w io.Writer) func(string) {
	var mu sync.Mutex
	return func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "sbf: %s\n", termsafe.Text(msg))
	}
}

// run is sbf's command line in process (tests).
func run(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runWith(nil, args, getenv, stdin, stdout, stderr)
}

func runWith(server *Server, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runIn(context.Background(), processRoot{}, server, args, getenv, stdin, stdout, stderr)
}

// runIn runs one command with ctx in the process root.
func runIn(ctx context.Context, root processRoot, server *Server, args []string, getenv func(string) string,
	stdin io.Reader, stdout, stderr io.Writer) int {
	// What a command waits for outside a run's steps (a lock another sbf
	// holds, a sandbox still booting) is said on stderr as it waits.
	ctx = waits.WithListener(ctx, waitLines(stderr))
	a := &app{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr, server: server, runCtx: ctx,
		interrupts: root.interrupts, executable: root.executable, tuned: root.tuned}
	sbf := a.rootCommand()
	sbf.SetArgs(terraformSpellings(args))
	if len(args) > 0 && strings.HasPrefix(args[0], cobra.ShellCompRequestCmd) { // descriptions are help text
		a.polish()
	}
	sbf.SetIn(stdin)
	sbf.SetOut(stdout)
	sbf.SetErr(stderr)
	cmd, err := sbf.ExecuteContextC(ctx)
	for _, close := range a.closers {
		close()
	}
	if a.stopListening != nil {
		a.stopListening()
	}
	if err == nil {
		if a.interrupts.interrupted() {
			return 130 // as Terraform: a run Ctrl-C stopped is not a success, even when nothing was left
		}
		return 0
	}
	code, hint := 1, false
	if a.interrupts.interrupted() {
		code = 130 // as a shell reports a command ended by Ctrl-C
	}
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code, hint = ee.code, ee.hint
		if ee.err == nil {
			return code
		}
	case strings.HasPrefix(err.Error(), "unknown command"), strings.HasPrefix(err.Error(), "unknown flag"):
		code = 2
	}
	printErrors(stderr, err)
	if code == 2 || hint {
		path := "sbf"
		if cmd != nil && !cmd.Hidden { // a hidden command (sbf stop) has no help of its own to read
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
	}
	return code
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "sbf",
		Short: "Declarative, VM-isolated workspaces",
		Long: "sbf converges the sandboxes a workspace's .sandboxforge.toml declares: VMs, the Docker Compose " +
			"stack inside them and the services they need.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version, // --version, as `sbf version` prints it
	}
	root.SetVersionTemplate(versionLine(buildinfo.Read()) + "\n")
	root.PersistentFlags().
		StringVarP(&a.dir, "directory", "C", ".", "run as if started in `DIR`, as git -C (default: here): the "+
			"workspace is the nearest folder with a .sandboxforge.toml, there or above")
	// The usage text says what the default is; pflag would add (default ".").
	root.PersistentFlags().Lookup("directory").DefValue = ""
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if a.tuned && cmd.Hidden { // a helper sbf starts beside a VM, for its life
			untuneCollector(a.getenv)
		}
		if a.interrupts != nil && !handlesSignals(cmd) {
			a.stopListening = a.interrupts.listen()
		}
		return a.findWorkspace(cmd)
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return flagError(cmd, err, 2) })
	root.AddCommand(
		a.validateCommand(),
		a.planCommand(),
		a.applyCommand(),
		a.statusCommand(),
		a.upCommand(),
		a.destroyCommand(),
		a.extendCommand(),
		a.reconcileCommand(),
		a.execCommand(),
		a.shellCommand(),
		a.execBrokerCommand(),
		a.cpCommand(),
		a.syncCommand(),
		a.taskCommand(),
		a.initCommand(),
		a.schemaCommand(),
		a.imageCommand(),
		a.doctorCommand(),
		a.poolCommand(),
		a.importV1Command(),
		a.serviceCommand(),
		a.versionCommand(),
	)
	root.AddCommand(a.serverCommands()...)
	root.AddCommand(a.egressCommands()...)
	root.AddCommand(a.egressCommand())
	root.AddCommand(a.sandboxToolCommands()...)
	root.AddCommand(a.docsCommand())
	root.AddCommand(a.backendCommands()...)
	a.addHabits(root)                // habits.go: docker's and kubectl's words
	a.polish = polishWhenShown(root) // helptext.go: examples and value words, once every command exists
	return root
}

// args wraps a positional-argument rule so its failures are usage errors
// that show the arguments wanted (cobra says only "accepts 1 arg(s),
// received 0").
func args(rule cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, list []string) error {
		if err := rule(cmd, list); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("%w; usage: %s", err, strings.TrimSuffix(cmd.UseLine(), " [flags]"))}
		}
		return nil
	}
}
