package lima

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/atomicfile"
	"github.com/sandboxforge/sbf/internal/lazyre"
)

//go:embed wrappers
var wrappers embed.FS

// Start boots an instance and waits (up to StartTimeout) until it is
// ready, passing Lima's progress on and, where KVM cannot run guests,
// running QEMU under software emulation when the spec allows it. An
// instance a start cut short left booting is waited for.
func (d *Driver) Start(ctx context.Context, s drivers.Spec) error {
	if err := d.checkExists(s.Name); err != nil {
		return err
	}
	if err := d.repairFork(ctx, d.instanceDir(s.Name)); err != nil {
		return err
	}
	os.Remove(filepath.Join(d.instanceDir(s.Name), forkRestored)) // this start boots, unless a fork restores it
	os.Remove(filepath.Join(d.instanceDir(s.Name), masterStale))  // the boot's master reads the environment anew
	if err := d.limactlStart(ctx, s); err != nil {
		return err
	}
	if err := d.waitBooted(ctx, s.Name); err != nil {
		return err
	}
	d.configureGuestEgress(ctx, s)
	return nil
}

// limactlStart runs `limactl start`, which returns once Lima's checks of
// the guest passed (or a slow guest agent was all that failed them).
func (d *Driver) limactlStart(ctx context.Context, s drivers.Spec) error {
	env, err := d.startEnv(ctx, s)
	if err != nil {
		return err
	}
	last := ""
	stderr, err := d.runStreaming(ctx, env, func(line string) {
		// Lima repeats what it waits for every few seconds; once is news.
		if msg, ok := limaProgress(line); ok && msg != last {
			last = msg
			drivers.Progressf(ctx, "%s", msg)
		}
	}, "start", "--timeout", d.opts.StartTimeout.String(), s.Name)
	if err != nil && d.lateGuestAgent(ctx, stderr, s.Name) {
		drivers.Progressf(ctx, "lima warning: the VM runs, but Lima's guest agent did not answer within its minute "+
			"(a slow boot); Lima keeps retrying, and port forwards start once it answers")
		err = nil
	}
	if err != nil {
		return notFound(d.bootFailure(err, stderr, s.Name), s.Name)
	}
	return nil
}

// checkExists refuses to start what is not there: `limactl start NAME`
// would create it from template://default (which mounts the home folder)
// rather than fail. Lima creates nothing where the instance's folder
// exists, so that is what is checked.
func (d *Driver) checkExists(name string) error {
	home := limaHome(d.opts.Getenv)
	if home == "" {
		return nil // limactl cannot find instances either, and says so
	}
	if _, err := os.Stat(filepath.Join(home, name)); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lima instance %s: %w", name, drivers.ErrNotFound)
	}
	return nil
}

// lateGuestAgent tells a boot that only missed Lima's one-minute wait for
// its guest agent (which a software-emulated boot on a busy host can)
// from a real failure: the VM is running, and Lima's host agent goes on
// connecting to the guest agent in the background. sbf's own exec and
// copy do not need the guest agent.
func (d *Driver) lateGuestAgent(ctx context.Context, stderr, name string) bool {
	if !strings.Contains(stderr, "DEGRADED") || !strings.Contains(stderr, "guest agent does not seem to be running") ||
		strings.Count(stderr, "level=error") > 1 {
		return false
	}
	list, err := d.List(ctx)
	if err != nil {
		return false
	}
	for _, inst := range list {
		if inst.Name == name {
			return inst.Status == drivers.Running
		}
	}
	return false
}

// qemuChoice is how a VM's QEMU is started: Var is the QEMU_SYSTEM_<ARCH>
// variable sbf points at its wrapper, Real the QEMU the wrapper execs, TCG
// whether it rewrites Lima's KVM request into software emulation.
type qemuChoice struct {
	Var, Real string
	// Args are words the user's QEMU_SYSTEM_<ARCH> gave after the binary;
	// Lima passes them first, the wrapper on to Real.
	Args   []string
	TCG    bool
	Reason string // why there is no usable KVM, when TCG
	// CPU is the model KVM runs guests with, when it is not Lima's "host".
	CPU string
}

// startEnv is the environment `limactl start` needs beyond sbf's own: for
// every QEMU guest on Linux, the wrapper that starts QEMU through `sbf
// egress-qemu` (its host guard, whatever the egress mode, and its network
// policy); for guests of the host's arch without usable KVM, software
// emulation too.
func (d *Driver) startEnv(ctx context.Context, s drivers.Spec) ([]string, error) {
	q, err := d.chooseQEMU(ctx, s)
	if err != nil || q.Var == "" {
		return nil, err
	}
	dir, err := d.installWrappers()
	if err != nil {
		return nil, err
	}
	env := []string{
		q.Var + "=" + strings.Join(append([]string{filepath.Join(dir, "qemu-system")}, q.Args...), " "),
		"SBF_REAL_QEMU=" + q.Real,
		"PATH=" + filepath.Join(dir, "bin") + string(os.PathListSeparator) + d.opts.Getenv("PATH"),
		// What the ssh wrapper did, for when a slow boot still ends degraded.
		"SBF_SSH_WRAPPER_LOG=" + filepath.Join(filepath.Dir(dir), "ssh-wrapper.log"),
	}
	if q.CPU != "" {
		// Lima v1.2.1 fixes cpuType in lima.yaml when the instance is made;
		// the model that works is a fact of this boot of the host, so the
		// wrapper, which starts every QEMU, substitutes it for "host".
		env = append(env, "SBF_QEMU_CPU="+q.CPU)
	}
	if q.TCG {
		env = append(env, "SBF_QEMU_TCG=1")
		d.noteEmulation.Do(func() {
			drivers.Progressf(ctx, "no usable hardware virtualization (%s): QEMU runs in software emulation, "+
				"about 10x slower; a first boot takes minutes", q.Reason)
		})
	}
	egressEnv, err := d.egressEnv(ctx, s)
	if err != nil {
		return nil, err
	}
	return append(env, egressEnv...), nil
}

// chooseQEMU decides how the VM's QEMU runs. A zero Var means Lima's own
// choice stands (macOS, another vmType); a QEMU the user named with
// QEMU_SYSTEM_<ARCH> is kept, and wrapped (for the host guard) but not
// emulated.
func (d *Driver) chooseQEMU(ctx context.Context, s drivers.Spec) (qemuChoice, error) {
	arch := drivers.CanonicalArch(s.Arch)
	host := drivers.CanonicalArch(d.opts.HostArch)
	if arch == "" {
		arch = host
	}
	if d.opts.HostOS != "linux" || s.VMType != "qemu" {
		return qemuChoice{}, nil // macOS has its own hypervisor
	}
	q := qemuChoice{Var: "QEMU_SYSTEM_" + strings.ToUpper(arch)}
	if v := strings.Fields(d.opts.Getenv(q.Var)); len(v) > 0 {
		q.Real, q.Args = v[0], v[1:] // the user chose a QEMU; leave its accelerator alone
		return q, nil
	}
	real, err := findExecutable("qemu-system-"+arch, d.opts.Getenv("PATH"))
	if err != nil {
		return q, err
	}
	q.Real = real
	if arch != host {
		return q, nil // foreign arches are emulated by Lima itself
	}
	mode := s.Emulation
	if mode == "" {
		mode = "auto"
	}
	q.Reason = "[vm] emulation = \"always\""
	if mode != "always" {
		a := d.detectAccel(ctx, real)
		if a.Usable {
			if a.CPU != cpuModels[0] {
				q.CPU = a.CPU
			}
			return q, nil
		}
		if mode == "never" {
			steps := []string{`or allow software emulation (about 10x slower): [vm] emulation = "auto"`}
			if a.Fix != "" {
				steps = append([]string{a.Fix}, steps...)
			}
			return q, unavailable("hardware_virtualization_unavailable",
				"KVM cannot run guests here: "+a.Reason+`, and [vm] emulation = "never"`, steps...)
		}
		q.Reason = a.Reason
	}
	q.TCG = true
	return q, nil
}

// installWrappers writes the QEMU and ssh wrappers into sbf's state
// folder (rewritten only when they changed) and returns their folder.
func (d *Driver) installWrappers() (string, error) {
	if d.opts.StateDir == "" {
		return "", errors.New("software emulation needs sbf's state folder for its QEMU wrapper")
	}
	dir := filepath.Join(d.opts.StateDir, "lima", "wrappers")
	for src, dst := range map[string]string{"wrappers/qemu-system": "qemu-system", "wrappers/ssh": "bin/ssh"} {
		want, _ := wrappers.ReadFile(src)
		path := filepath.Join(dir, dst)
		if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, want) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("installing the emulation wrappers: %w", err)
		}
		if err := atomicfile.WriteFile(path, want, 0o755); err != nil {
			return "", fmt.Errorf("installing the emulation wrappers: %w", err)
		}
	}
	return dir, nil
}

// runStreaming runs limactl with extra environment, handing each stderr
// line to onLine as it comes; it returns stderr whole as well.
func (d *Driver) runStreaming(ctx context.Context, env []string, onLine func(string), args ...string) (string, error) {
	cmd := proc.Command(ctx, d.limactl, append([]string{"--tty=false"}, args...)...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	var all strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			onLine(sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return all.String(), &CommandError{Args: args, ExitCode: exit.ExitCode(), Stderr: all.String()}
	}
	if err != nil {
		return all.String(), fmt.Errorf("running limactl %s: %w", strings.Join(args, " "), err)
	}
	return all.String(), nil
}

var logrusMsg = lazyre.New(`level=(\w+) msg=("(?:[^"\\]|\\.)*")`)

// retriedGuestAgentWarnings are what Lima's host agent warns each time it
// reaches for the guest agent before the guest has started it; it tries
// again 10 s later (lima v1.2.1, pkg/hostagent/hostagent.go), so during a
// boot they are not a problem: the boot's own end says whether it worked.
var retriedGuestAgentWarnings = []string{
	"guest agent events closed unexpectedly",
	"connection to the guest agent was closed unexpectedly",
}

// limaProgress picks the lines of `limactl start` worth showing: what
// the boot waits for and how it ends, and every warning.
func limaProgress(line string) (string, bool) {
	m := logrusMsg.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	msg, err := strconv.Unquote(m[2])
	if err != nil {
		return "", false
	}
	msg = strings.TrimPrefix(msg, "[hostagent] ")
	if m[1] == "warning" && slices.Contains(retriedGuestAgentWarnings, msg) {
		return "lima: the guest agent does not answer yet (" + msg + "); Lima asks again every 10 s, " +
			"which is normal while the guest boots", true
	}
	if m[1] != "info" && m[1] != "debug" {
		return "lima " + m[1] + ": " + msg, true
	}
	for _, k := range []string{"Waiting for", "requirement", "READY", "Starting QEMU", "Downloading", "Exiting"} {
		if strings.Contains(msg, k) {
			return "lima: " + msg, true
		}
	}
	return "", false
}

// bootFailure says where to look when a boot fails: the guest's serial
// console and the host agent's log, with a hint when the cause is known.
func (d *Driver) bootFailure(err error, stderr, name string) error {
	err = guidance(err)
	home := limaHome(d.opts.Getenv)
	if home == "" {
		return err
	}
	dir := filepath.Join(home, name)
	ha, _ := os.ReadFile(filepath.Join(dir, agentLog))
	hint := ""
	switch {
	case bytes.Contains(ha, []byte("Could not access KVM kernel module")),
		bytes.Contains(ha, []byte("failed to initialize kvm")):
		hint = "\nhint: QEMU could not use KVM; set [vm] emulation = \"always\" to run in software emulation"
	case strings.Contains(stderr, "DEGRADED"):
		hint = "\nhint: the VM booted but Lima's guest agent did not come up"
	}
	return fmt.Errorf("%w%s\nserial console: %s\nhost agent log: %s", err, hint,
		filepath.Join(dir, "serial.log"), filepath.Join(dir, agentLog))
}
