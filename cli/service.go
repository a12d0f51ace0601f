package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/atomicfile"
	"github.com/sandboxforge/sbf/internal/mcptoken"
	"github.com/sandboxforge/sbf/internal/service"
	"github.com/sandboxforge/sbf/spec"
)

func (a *app) serviceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Run the reconcile loop as a user service, so leases end with no sbf running",
		Long: "service registers `sbf serve --loop-only` (or, with --http, the MCP server too) with this host's\n" +
			"service manager for the current user: a systemd user unit on Linux, a launchd agent on macOS, a\n" +
			"scheduled task on Windows. It starts at login, restarts when it fails, and expires leases whose\n" +
			"terminal was closed long ago.",
	}
	cmd.AddCommand(a.serviceInstallCommand(), a.serviceUninstallCommand(), a.serviceStatusCommand())
	return cmd
}

type serviceFlags struct {
	http, tokenFile string
	dryRun, noStart bool
}

func (a *app) serviceInstallCommand() *cobra.Command {
	var f serviceFlags
	cmd := &cobra.Command{
		Use:   "install [WORKSPACE_DIR]...",
		Short: "Register and start the loop for the named workspaces (default: every workspace holding a lease)",
		Example: "  sbf service install                      # the loop, for every workspace holding a lease\n" +
			"  sbf service install --http ~/src         # and MCP over HTTP, serving the workspaces in ~/src",
		Long: "install writes the service manager's file (shown by --dry-run), registers it and (re)starts it.\n" +
			"The service gets this shell's PATH and sbf's variables (SBF_*, LIMA_*, MCP_*, XDG_*_HOME, ...) but\n" +
			"not the secrets a spec reads with ${VAR}; run install again after changing them. On Windows the\n" +
			"task runs with the user's environment (setx), and writes its messages to a log file.",
		RunE: func(_ *cobra.Command, dirs []string) error { return a.serviceInstall(dirs, f) },
	}
	cmd.Flags().StringVar(&f.http, "http", "",
		"also serve MCP over Streamable HTTP on `ADDR` (default "+DefaultHTTPAddr+")")
	cmd.Flags().Lookup("http").NoOptDefVal = DefaultHTTPAddr
	cmd.Flags().StringVar(&f.tokenFile, "token-file", "", "with --http, the bearer token every request must carry "+
		"is `FILE`'s content (default: one sbf generates in its state folder, and says where)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the file and the commands; write and run nothing")
	cmd.Flags().BoolVar(&f.noStart, "no-start", false, "write the file only, and print the commands that would start it")
	return cmd
}

func (a *app) serviceInstall(dirs []string, f serviceFlags) error {
	// `--http ADDR` as two words: a bare --http takes the default address,
	// so the address arrives as the one argument (as with sbf mcp --http).
	if f.http == DefaultHTTPAddr && len(dirs) > 0 && !pathExists(dirs[0]) {
		if _, _, err := net.SplitHostPort(dirs[0]); err == nil {
			f.http, dirs = dirs[0], dirs[1:]
		}
	}
	h, m, err := a.serviceManager()
	if err != nil {
		return err
	}
	d, err := a.serviceDefinition(h, dirs, f)
	if err != nil {
		return err
	}
	data, err := m.Render(d)
	if err != nil {
		return err
	}
	if f.dryRun {
		fmt.Fprintf(a.stdout, "# %s\n%s\n", m.Path(), data)
		for _, s := range m.Install() {
			fmt.Fprintf(a.stdout, "$ %s\n", s)
		}
		return nil
	}
	for _, dir := range []string{filepath.Dir(m.Path()), filepath.Dir(d.LogFile), d.WorkDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating %s for the service: %w", dir, err)
		}
	}
	if err := atomicfile.WriteFile(m.Path(), data, 0o644); err != nil {
		return fmt.Errorf("writing the service file: %w", err)
	}
	if f.noStart {
		fmt.Fprintf(a.stdout, "wrote %s; to start it:\n", m.Path())
		for _, s := range m.Install() {
			fmt.Fprintf(a.stdout, "  %s\n", s)
		}
		return nil
	}
	if err := a.runSteps(m.Install()); err != nil {
		if unreachable(m, err) {
			return managerUnreachable(m, fmt.Sprintf("wrote %s but could not start it", m.Path()), err)
		}
		return fmt.Errorf("registering %s (the file stays; 'sbf service uninstall' removes it): %w", m.Path(), err)
	}
	fmt.Fprintf(a.stdout, "sbf service: %s installed and started (%s); logs: %s\n", service.Name, m.Path(), m.Logs(d))
	if f.http != "" {
		fmt.Fprintf(a.stdout, "MCP clients of http://%s/mcp send the bearer token in %s "+
			"(header Authorization: Bearer TOKEN)\n", f.http, d.Args[3])
	}
	if m.Kind() == "systemd" {
		fmt.Fprintln(a.stdout, "It runs while you are logged in; to keep it running after logout: loginctl enable-linger")
	}
	return nil
}

// serviceDefinition is what the service runs: this sbf, serve with the
// install's choices, and the environment it needs to find the same state.
func (a *app) serviceDefinition(h service.Host, dirs []string, f serviceFlags) (service.Definition, error) {
	d := service.Definition{Description: service.Description, LogFile: service.DefaultLogFile(h)}
	var err error
	if d.Program, err = a.stableExecutable(); err != nil {
		return d, err
	}
	if d.WorkDir, err = filepath.Abs(a.hostDir()); err != nil {
		return d, err
	}
	switch {
	case f.http != "":
		d.Description += ", and MCP over HTTP on " + f.http
		token, err := a.serviceToken(f)
		if err != nil {
			return d, err
		}
		d.Args = []string{"serve", f.http, "--token-file", token}
		roots, err := a.serviceRoots(dirs)
		if err != nil {
			return d, err
		}
		d.Args = append(d.Args, roots...)
	case f.tokenFile != "":
		return d, usageErrorf("--token-file needs --http")
	default:
		d.Args = []string{"serve", "--loop-only"}
		for _, dir := range dirs {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return d, err
			}
			if !spec.HasSpec(abs) {
				return d, usageErrorf("%s is not a workspace: no %s there", dir, spec.FileName)
			}
			d.Args = append(d.Args, "--workspace", abs)
		}
	}
	if d.LogFile != "" {
		d.Args = append(d.Args, "--log-file", d.LogFile)
	}
	if h.OS == "windows" {
		if u, err := user.Current(); err == nil {
			d.User = u.Username
		}
		return d, nil
	}
	d.Env = a.serviceEnv()
	return d, nil
}

func pathExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// serviceRoots are the --workspace-root arguments of a service that serves
// MCP: the folders named, each of which must exist. With none named the
// operator's SBF_WORKSPACE_ROOTS (carried into the service) or global
// [policy] workspace_roots must name them: a server never serves the
// folder its manager starts it in.
func (a *app) serviceRoots(dirs []string) ([]string, error) {
	var args []string
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, usageErrorf("%s is not a folder: --http serves the workspaces in the folders named", dir)
		}
		args = append(args, "--workspace-root", abs)
	}
	if len(args) > 0 {
		return args, nil
	}
	if p, err := a.operator(); err != nil || len(p.WorkspaceRoots) > 0 {
		return nil, err
	}
	return nil, usageErrorf("--http serves MCP, and a server serves only the workspaces named: " +
		"sbf service install --http [ADDR] DIR... (each DIR and the workspaces below it), " +
		"or set SBF_WORKSPACE_ROOTS or [policy] workspace_roots in the global config")
}

// serviceToken is the bearer token file the service's server uses:
// --token-file, or the one sbf keeps for the service's server in its state
// folder, made now (not on a dry run) so clients can be set up before it
// starts.
func (a *app) serviceToken(f serviceFlags) (string, error) {
	if f.tokenFile != "" {
		return filepath.Abs(f.tokenFile)
	}
	state, err := filepath.Abs(a.hostDir())
	if err != nil {
		return "", err
	}
	file := mcptoken.Service(state, f.http)
	if !f.dryRun {
		if _, err := mcptoken.LoadOrCreate(file); err != nil {
			return "", err
		}
	}
	return file.Path(), nil
}

// serviceEnv is the installing shell's share of the service's environment,
// with the host state folder resolved: the loop must read the host index
// this shell's sbf writes, whatever the service manager's HOME and XDG
// variables say.
func (a *app) serviceEnv() []service.EnvVar {
	env := []service.EnvVar{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if v := a.getenv(name); v != "" && service.Carried(name) && name != "SBF_STATE_HOME" {
			env = append(env, service.EnvVar{Name: name, Value: v})
		}
	}
	state, err := filepath.Abs(a.hostDir())
	if err != nil {
		state = a.hostDir()
	}
	env = append(env, service.EnvVar{Name: "SBF_STATE_HOME", Value: state})
	slices.SortFunc(env, func(x, y service.EnvVar) int { return strings.Compare(x.Name, y.Name) })
	return slices.CompactFunc(env, func(x, y service.EnvVar) bool { return x.Name == y.Name })
}

// stableExecutable is the path the service runs: the sbf on PATH when it is
// this very program (a package manager's symlink survives upgrades; the
// file it points to may not), else this program's own path.
func (a *app) stableExecutable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding sbf's own path for the service: %w", err)
	}
	if onPath, err := exec.LookPath("sbf"); err == nil {
		if abs, err := filepath.Abs(onPath); err == nil && sameFile(abs, exe) {
			return abs, nil
		}
	}
	return exe, nil
}

func sameFile(a, b string) bool {
	x, err1 := os.Stat(a)
	y, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(x, y)
}

func (a *app) serviceManager() (service.Host, service.Manager, error) {
	h := service.Host{OS: runtime.GOOS, Home: a.getenv("HOME"), ConfigHome: a.getenv("XDG_CONFIG_HOME"),
		UID: os.Getuid(), LocalAppData: a.getenv("LOCALAPPDATA")}
	if h.Home == "" {
		h.Home, _ = os.UserHomeDir()
	}
	m, err := service.For(h)
	return h, m, err
}

func (a *app) serviceUninstallCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "uninstall",
		Short: "Stop the loop's service and remove its file",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			_, m, err := a.serviceManager()
			if err != nil {
				return err
			}
			// Only a manager that answered can have stopped the service;
			// one that said no (not loaded) means it was not running.
			var stopErr error
			for _, s := range m.Uninstall() {
				if err := runStep(s); err != nil && stopErr == nil {
					stopErr = err
				}
			}
			err = os.Remove(m.Path())
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(a.stdout, "sbf service: not installed (no %s)\n", m.Path())
				return nil
			}
			if err != nil {
				return fmt.Errorf("removing the service file: %w", err)
			}
			if stopErr != nil && unreachable(m, stopErr) {
				return managerUnreachable(m, fmt.Sprintf("removed %s but could not stop %s", m.Path(), service.Name),
					stopErr)
			}
			if m.Kind() == "systemd" {
				a.runSteps([]service.Step{{Args: []string{"systemctl", "--user", "daemon-reload"}, MayFail: true}})
			}
			if stopErr != nil {
				fmt.Fprintf(a.stdout, "sbf service: %s removed (%s); it was not running (%s)\n", service.Name, m.Path(),
					stepSaid(stopErr))
				return nil
			}
			fmt.Fprintf(a.stdout, "sbf service: %s stopped and removed (%s)\n", service.Name, m.Path())
			return nil
		},
	}
}

// serviceStatus is `sbf service status --json`.
type serviceStatus struct {
	Manager   string   `json:"manager"`
	File      string   `json:"file"`
	Installed bool     `json:"installed"`
	Running   bool     `json:"running"`           // the manager says it runs (exit 0 of its status command)
	Command   []string `json:"command,omitempty"` // what the unit runs (systemd)
	// Report is the service manager's own account, as it printed it.
	Report string `json:"report,omitempty"`
}

func (a *app) serviceStatusCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say whether the loop's service is installed and what its manager reports",
		Long: "status prints the service file and its manager's report. As systemctl status, it exits 0 when\n" +
			"the service runs, 3 when it is not installed or not running, and 1 when the manager could not be\n" +
			"asked (no user systemd in this shell, say).",
		Example: "  sbf service status\n  sbf service status --json | jq .running",
		Args:    args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			_, m, err := a.serviceManager()
			if err != nil {
				return err
			}
			st := serviceStatus{Manager: m.Kind(), File: m.Path()}
			data, err := os.ReadFile(m.Path())
			if st.Installed = err == nil; st.Installed {
				if m.Kind() == "systemd" {
					st.Command, _, _ = service.ParseUnit(data)
				}
				report, err := stepOutput(m.Status())
				if err != nil && unreachable(m, err) {
					return managerUnreachable(m, "cannot say whether "+service.Name+" runs", err)
				}
				st.Running, st.Report = err == nil, report
			}
			if asJSON {
				if err := writeJSON(a.stdout, st); err != nil {
					return err
				}
			} else if !st.Installed {
				fmt.Fprintf(a.stdout, "sbf service: not installed (no %s); sbf service install adds it\n", st.File)
			} else {
				fmt.Fprintf(a.stdout, "sbf service: installed (%s: %s)\n", st.Manager, st.File)
				if st.Command != nil {
					fmt.Fprintf(a.stdout, "runs: %s\n", service.Step{Args: st.Command})
				}
				fmt.Fprintln(a.stdout, st.Report)
			}
			if !st.Running {
				return silentExit(3)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}
