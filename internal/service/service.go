// Package service describes sbf's reconcile loop as a per-user service of
// the host's service manager: a systemd user unit on Linux, a launchd
// agent on macOS, a scheduled task on Windows. It renders each manager's
// file and says which commands register, remove and report it; running
// those commands is the caller's job, so everything here is testable on
// any host.
package service

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Name is the service's name wherever the manager lets sbf choose one
// (the unit sbf-serve.service, the task \SandboxForge\sbf-serve).
const Name = "sbf-serve"

// Description is the service's one-line description.
const Description = "sbf reconcile loop: lease expiry and repair"

// Label is the launchd agent's label: launchd wants reverse-DNS names.
const Label = "dev.sandboxforge.sbf-serve"

// Definition is what the service runs.
type Definition struct {
	Description string
	Program     string   // absolute path of the sbf executable
	Args        []string // after Program
	Env         []EnvVar // sorted by name
	// WorkDir is the folder the service starts in: named, never the
	// manager's default ($HOME for a systemd user unit, / for launchd),
	// so no relative path it meets lands somewhere nobody chose.
	WorkDir string
	// LogFile is where the loop's messages go on managers without a
	// journal (launchd, Windows); systemd keeps them in the journal.
	LogFile string
	// User is the account a Windows task runs as and whose logon starts it
	// (DOMAIN\name); the other managers run per-user services already.
	User string
}

// EnvVar is one variable of the service's environment.
type EnvVar struct{ Name, Value string }

func (d Definition) check() error {
	if !strings.HasPrefix(d.Program, "/") && !isWindowsAbs(d.Program) {
		return fmt.Errorf("the service's program must be an absolute path, got %q", d.Program)
	}
	if d.WorkDir == "" || !strings.HasPrefix(d.WorkDir, "/") && !isWindowsAbs(d.WorkDir) {
		return fmt.Errorf("the service's working folder must be an absolute path, got %q", d.WorkDir)
	}
	fields := append([]string{d.Program, d.Description, d.LogFile, d.WorkDir}, d.Args...)
	for _, s := range append(fields, envStrings(d.Env)...) {
		if strings.ContainsAny(s, "\x00\n\r") {
			return fmt.Errorf("a service definition cannot hold a line break or NUL: %q", s)
		}
	}
	return nil
}

func isWindowsAbs(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') || strings.HasPrefix(p, `\\`)
}

func envStrings(env []EnvVar) []string {
	var out []string
	for _, e := range env {
		out = append(out, e.Name, e.Value)
	}
	return out
}

// Carried reports whether a variable of the installing shell is copied
// into the service's environment: the ones that choose where sbf keeps
// state, which backend binaries it finds, and the MCP server's settings.
// Test switches (the sim driver, a pinned clock) never are: a service
// must run against the real world with the real time.
func Carried(name string) bool {
	for _, p := range []string{"SBF_NOW", "SBF_ENABLE_SIM", "SBF_SIM_", "SBF_TEST_", "SBF_VZ_TEST_", "SBF_DEBUG"} {
		if name == p || strings.HasSuffix(p, "_") && strings.HasPrefix(name, p) {
			return false
		}
	}
	for _, p := range []string{"SBF_", "LIMA_", "HYPERV_", "MCP_", "SANDBOX_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return slices.Contains([]string{"PATH", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
		"MAX_INSTANCES", "DEFAULT_TTL_MINUTES", "MAX_TTL_MINUTES"}, name)
}

// Step is one command the manager is told; a step that may fail (stopping
// what is not running) does not end the sequence.
type Step struct {
	Args    []string
	MayFail bool
}

func (s Step) String() string {
	var words []string
	for _, a := range s.Args {
		if a == "" || strings.ContainsAny(a, " \t\"'\\$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

// Manager is one platform's service manager.
type Manager interface {
	Kind() string // "systemd", "launchd", "schtasks"
	// Path is the file the definition is written to.
	Path() string
	// Render is the file's content.
	Render(Definition) ([]byte, error)
	// Install registers and starts the written file (again, after a change).
	Install() []Step
	// Uninstall stops and unregisters it; the caller then removes the file.
	Uninstall() []Step
	// Status asks the manager about it; its output is shown as it is.
	Status() Step
	// Logs says where the loop's messages can be read.
	Logs(Definition) string
}

// Host is what locating a manager's files needs to know of the user.
type Host struct {
	OS           string // runtime.GOOS
	Home         string
	ConfigHome   string // XDG_CONFIG_HOME, when set
	UID          int    // launchd's gui/UID domain
	LocalAppData string // %LOCALAPPDATA% on Windows
}

// ErrUnsupported is returned for a host OS with no service manager here.
var ErrUnsupported = errors.New("sbf service supports Linux (systemd), macOS (launchd) and Windows (Task Scheduler)")

// For returns the host's manager.
func For(h Host) (Manager, error) {
	switch h.OS {
	case "linux":
		dir := h.ConfigHome
		if dir == "" {
			dir = path.Join(h.Home, ".config")
		}
		return systemd{dir: path.Join(dir, "systemd", "user")}, nil
	case "darwin":
		return launchd{dir: path.Join(h.Home, "Library", "LaunchAgents"), uid: h.UID}, nil
	case "windows":
		return schtasks{dir: windowsJoin(h.LocalAppData, "sandboxforge")}, nil
	}
	return nil, fmt.Errorf("%w; this host runs %s", ErrUnsupported, h.OS)
}

// windowsJoin joins with backslashes whatever OS renders the file, so a
// Windows task is the same rendered here as there.
func windowsJoin(elem ...string) string {
	for i := range elem {
		elem[i] = strings.TrimRight(elem[i], `\/`)
	}
	return strings.Join(elem, `\`)
}

// DefaultLogFile is where the loop's messages go on managers without a
// journal: where each platform keeps a user's logs.
func DefaultLogFile(h Host) string {
	switch h.OS {
	case "darwin":
		return path.Join(h.Home, "Library", "Logs", "sandboxforge", Name+".log")
	case "windows":
		return windowsJoin(h.LocalAppData, "sandboxforge", "logs", Name+".log")
	}
	return ""
}

// PackagedDefinition is the service the Linux packages install for every
// user (packaging/systemd): the packaged binary, the loop alone, the
// default state folder.
func PackagedDefinition() Definition {
	return Definition{Description: Description,
		Program: "/usr/bin/sbf", Args: []string{"serve", "--loop-only"}, WorkDir: "/",
		Env: []EnvVar{{Name: "PATH", Value: PackagedPath}}}
}

// PackagedPath is the packaged unit's PATH. A user manager's own PATH is
// whatever the distribution compiled in, and the loop runs limactl, which
// a hand install puts in /usr/local/bin and Homebrew on Linux in its prefix.
const PackagedPath = "/usr/local/bin:/usr/bin:/bin:/home/linuxbrew/.linuxbrew/bin:/usr/local/sbin:/usr/sbin:/sbin"
