package external

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sandboxforge/sbf/internal/proc"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

// Program is how a backend's plugin is found and described to the person when it is not.
type Program struct {
	Driver string // the backend's name in specs: kubevirt
	Binary string // the program's file name: sbf-kubevirt
	EnvVar string // a setting naming its path: SBF_KUBEVIRT_DRIVER
	Build  string // how to build and install it, as a next step
	// Env are the settings the plugin reads from its environment; sbf passes its own
	// values (drivers.Env.Getenv) of these.
	Env []string
}

// Find locates the plugin: the path EnvVar names, else a file named Binary next to
// sbf's own executable, else on PATH. A missing plugin is an *drivers.UnavailableError
// saying how to get one. A PATH folder inside one of guestWritable (after links), or a
// relative one, is passed over, as is a file there leading into one: a copy from a
// sandbox could have put the program there. The error names what was passed over.
func (p Program) Find(getenv func(string) string, guestWritable []string,
	workspaceHolding func(string) (string, bool)) (string, error) {
	if path := getenv(p.EnvVar); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", p.missing(fmt.Sprintf("%s=%s: %v", p.EnvVar, path, err))
		}
		return path, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), p.Binary)
		if _, err := os.Stat(beside); err == nil {
			return beside, nil
		}
	}
	path, skipped := lookPath(p.Binary, getenv("PATH"), guestPlaces{realPaths(guestWritable), workspaceHolding})
	if path != "" {
		return path, nil
	}
	reason := fmt.Sprintf("%s is neither next to sbf nor on PATH", p.Binary)
	if len(skipped) > 0 {
		reason += "; passed over " + strings.Join(skipped, "; ")
	}
	return "", p.missing(reason)
}

// lookPath finds binary in the PATH list's folders, passing over (and saying why)
// one that a guest's copies may have written.
func lookPath(binary, list string, guest guestPlaces) (found string, skipped []string) {
	for _, dir := range filepath.SplitList(list) {
		if dir == "" {
			dir = "."
		}
		path, err := exec.LookPath(filepath.Join(dir, binary))
		if err != nil && !errors.Is(err, exec.ErrDot) {
			continue
		}
		if why := guest.untrusted(dir, path); why != "" {
			skipped = append(skipped, fmt.Sprintf("%s (the PATH entry %s %s)", path, dir, why))
			continue
		}
		return path, skipped
	}
	return "", skipped
}

// guestPlaces are where a guest's copies may have written: the served roots
// and allowed paths, and any workspace (holding, when known).
type guestPlaces struct {
	writable []string
	holding  func(string) (string, bool)
}

// untrusted says why a PATH folder, or the program found there, is not to be run.
func (g guestPlaces) untrusted(dir, path string) string {
	if !filepath.IsAbs(dir) {
		return "is relative: it names whatever folder sbf runs in"
	}
	for _, p := range []string{dir, path} {
		real, err := hostpath.Real(p)
		if err != nil {
			return "cannot be resolved: " + err.Error()
		}
		for _, w := range g.writable {
			if hostpath.Within(real, []string{w}) {
				return fmt.Sprintf("leads to %s, inside %s, where copies from a sandbox may write", real, w)
			}
		}
		if g.holding == nil {
			continue
		}
		if root, ok := g.holding(filepath.Dir(real)); ok {
			return fmt.Sprintf("leads to %s, inside the workspace %s, where copies from a sandbox may write", real, root)
		}
	}
	return ""
}

// realPaths are the folders' absolute, symlink-free paths (as given when that fails).
func realPaths(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		if real, err := hostpath.Real(d); err == nil {
			d = real
		}
		out = append(out, d)
	}
	return out
}

func (p Program) missing(reason string) *drivers.UnavailableError {
	return &drivers.UnavailableError{Driver: p.Driver, Reason: reason, ProbableCause: "backend_binary_missing",
		NextSteps: []string{p.Build, "put " + p.Binary + " next to sbf or on PATH, or set " + p.EnvVar + " to its path"}}
}

// process is a running plugin.
type process struct {
	cmd    *exec.Cmd
	stderr *tail
	waited chan struct{}
	err    error // how it ended, once waited is closed
}

// start runs the plugin at path with env (KEY=VALUE) and returns the session on its
// pipes. Its stderr is kept (the last few KiB) to say why it died.
func start(path string, env []string, debug func(string, ...any)) (*conn, *process, error) {
	cmd := exec.Command(path, "plugin")
	proc.Group(cmd) // a Ctrl-C at the terminal is sbf's to handle, not the plugin's
	cmd.Env = env
	p := &process{cmd: cmd, stderr: &tail{max: 4 << 10, debug: debug}, waited: make(chan struct{})}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.waited)
	}()
	return newConn(out, in, p.died), p, nil
}

// died waits for the plugin's end and says what it was.
func (p *process) died() error {
	<-p.waited
	msg := fmt.Sprintf("the plugin %s exited", filepath.Base(p.cmd.Path))
	if p.err != nil {
		msg += " (" + p.err.Error() + ")"
	}
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		msg += ": " + s
	}
	return errors.New(msg)
}

// tail keeps the last max bytes written to it, and passes each write to debug.
type tail struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	debug func(string, ...any)
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.debug != nil {
		t.debug("plugin: %s", strings.TrimRight(string(b), "\n"))
	}
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
