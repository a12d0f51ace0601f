// Package lima drives Lima (limactl) for sbf: it generates each
// instance's lima.yaml from the spec, runs limactl for the lifecycle, and
// executes commands over one persistent SSH connection per running VM
// rather than a `limactl shell` process per command.
package lima

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
	"github.com/sandboxforge/sbf/images"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
)

// Name is the driver name in specs.
const Name = "lima"

// Options configure the driver. Zero values pick the defaults.
type Options struct {
	Limactl      string        // path or name of limactl; default "limactl" on PATH
	StartTimeout time.Duration // passed to `limactl start --timeout`; default 15m
	HostOS       string        // runtime.GOOS spelling
	HostArch     string        // runtime.GOARCH spelling
	Euid         func() int    // default os.Geteuid; limactl refuses root
	Getenv       func(string) string
	Debug        func(format string, args ...any) // where fallbacks are reported
	Clock        clock.Clock                      // measures command durations
	// StateDir is sbf's host-wide state folder: the driver caches what
	// it measured there (limactl's version, whether KVM works) and keeps
	// its emulation wrappers.
	StateDir string
	// Self is the sbf binary QEMU's wrapper runs for a network policy
	// (egress-qemu, egress-proxy, egress-relay); default os.Executable().
	Self string
	// Image finds an sbf image ([vm.image] location = "sbf:NAME") built
	// for arch; default: the image cache of this user, then the host's.
	Image func(name, arch string) (images.Image, error)
	// SourceTree is sbf's source tree when sbf runs from it ("": it does
	// not): only then does guidance name 'make lima'.
	SourceTree string
	// GuestHostPorts are the host ports a guest may reach (the operator's
	// [policy] guest_host_ports); QEMU's host guard refuses every other.
	GuestHostPorts []int
}

// Driver is a Lima backend.
type Driver struct {
	opts      Options
	limactl   string
	version   string
	templates templateStore

	// Pool runs commands, copies and terminals over one kept-open SSH
	// connection per running instance; its methods are the driver's.
	*sshexec.Pool

	noteEmulation sync.Once
}

// New checks that Lima can run here and returns the driver, or an
// *drivers.UnavailableError saying why not and what to do.
func New(ctx context.Context, o Options) (*Driver, error) {
	d := newDriver(o)
	if err := d.check(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// newDriver fills in the defaults without checking anything.
func newDriver(o Options) *Driver {
	if o.StartTimeout == 0 {
		o.StartTimeout = 15 * time.Minute
	}
	if o.Euid == nil {
		o.Euid = os.Geteuid
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Debug == nil {
		o.Debug = func(string, ...any) {}
	}
	if o.Image == nil {
		o.Image = cachedImage(o.Getenv, o.Euid())
	}
	d := &Driver{opts: o}
	d.Pool = sshexec.New(d.sshOptions())
	return d
}

// Version is what `limactl --version` reported.
func (d *Driver) Version() string { return d.version }

func unavailable(cause, reason string, steps ...string) *drivers.UnavailableError {
	return &drivers.UnavailableError{Driver: Name, Reason: reason, ProbableCause: cause, NextSteps: steps}
}

// check finds limactl and proves it runs, in the order a user would fix
// things: host OS, privileges, binary, version.
func (d *Driver) check(ctx context.Context) error {
	if err := d.checkHost(); err != nil {
		return err
	}
	if err := d.checkUser(); err != nil {
		var missing *drivers.UnavailableError
		if ferr := d.findLimactl(ctx); errors.As(ferr, &missing) && missing.ProbableCause == "backend_binary_missing" {
			// Said first: a root who fixes the user still has no limactl.
			missing.Reason += " (and sbf runs as root, which limactl refuses)"
			missing.NextSteps = append(missing.NextSteps, rootSteps(d.opts.Getenv("SUDO_USER"), "/etc/passwd")...)
			return missing
		}
		return err
	}
	return d.findLimactl(ctx)
}

func (d *Driver) checkHost() error {
	if d.opts.HostOS != "linux" && d.opts.HostOS != "darwin" {
		return unavailable("unsupported_host_os",
			fmt.Sprintf("unsupported host OS '%s'; only macOS and Linux are supported", d.opts.HostOS),
			"use the hyperv driver on Windows ([vm] driver = \"hyperv\")")
	}
	return nil
}

func (d *Driver) checkUser() error {
	if d.opts.Euid() == 0 {
		return unavailable(
			"running_as_root",
			"limactl refuses to run as root",
			rootSteps(d.opts.Getenv("SUDO_USER"), "/etc/passwd")...)
	}
	return nil
}

func (d *Driver) findLimactl(ctx context.Context) error {
	name := d.opts.Limactl
	if name == "" {
		name = "limactl"
	}
	path, err := findExecutable(name, d.opts.Getenv("PATH"))
	var missing *drivers.UnavailableError
	if errors.As(err, &missing) && missing.ProbableCause == "backend_binary_missing" {
		missing.NextSteps = append(installSteps(d.opts.SourceTree, "install Lima 1.x"),
			"then put limactl on PATH or set SBF_LIMACTL to its path")
	}
	if err != nil {
		return err
	}
	d.limactl = path
	d.templates = newTemplateStore(path, d.opts.Getenv)
	version, err := d.limactlVersion(ctx)
	if err != nil {
		return unavailable("backend_binary_not_executable", fmt.Sprintf("%s --version failed: %v", path, err),
			"check that "+path+" is a working limactl binary for this machine")
	}
	d.version = version
	if major := strings.SplitN(strings.TrimPrefix(d.version, "v"), ".", 2)[0]; major == "0" || major == "" {
		return unavailable(
			"backend_version_unsupported",
			fmt.Sprintf("limactl %s is too old; sbf needs Lima 1.0 or newer", d.version),
			installSteps(d.opts.SourceTree, "upgrade Lima to 1.x")...,
		)
	}
	return nil
}

// findExecutable resolves limactl like the shell would, but tells a
// missing binary from one that is there without execute permission.
func findExecutable(name, pathEnv string) (string, error) {
	candidates := []string{name}
	if !strings.ContainsRune(name, os.PathSeparator) {
		candidates = nil
		for _, dir := range filepath.SplitList(pathEnv) {
			candidates = append(candidates, filepath.Join(dir, name))
		}
	}
	var notExec string
	for _, c := range candidates {
		info, err := os.Stat(c)
		if err != nil || info.IsDir() {
			continue
		}
		if info.Mode()&0o111 == 0 {
			notExec = c
			continue
		}
		return c, nil
	}
	if notExec != "" {
		return "", unavailable("backend_binary_not_executable", notExec+" is not executable", "chmod +x "+notExec)
	}
	return "", unavailable("backend_binary_missing", name+" not found in PATH")
}

// CommandError is a limactl invocation that failed.
type CommandError struct {
	Args     []string
	ExitCode int    // -1: ended by a signal
	Signal   string // the signal that ended it, when known
	Stderr   string
}

// Error never ends in an empty detail: a limactl killed before it said
// anything (an interrupt reached it) is said to have been, with no output.
func (e *CommandError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if i := strings.LastIndex(msg, "\n"); i >= 0 && len(msg) > 2000 {
		msg = "…" + msg[len(msg)-2000:]
	}
	return fmt.Sprintf("limactl %s: %s", strings.Join(e.Args, " "), coded.ProcessEnd(e.ExitCode, e.Signal, msg))
}

// run executes limactl with --tty=false so it never prompts.
func (d *Driver) run(ctx context.Context, stdin io.Reader, args ...string) (stdout, stderr []byte, err error) {
	full := append([]string{"--tty=false"}, args...)
	if len(args) == 1 && args[0] == "--version" {
		full = args
	}
	cmd := proc.Command(ctx, d.limactl, full...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.Bytes(), errb.Bytes(), &CommandError{Args: args, ExitCode: exit.ExitCode(),
			Signal: coded.SignalOf(exit.ProcessState), Stderr: errb.String()}
	}
	if err != nil {
		return out.Bytes(), errb.Bytes(), fmt.Errorf("running limactl %s: %w", strings.Join(args, " "), err)
	}
	return out.Bytes(), errb.Bytes(), nil
}
