package drivers

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/names"
)

// Driver is the lifecycle every backend provides; what else it can do is
// the optional interfaces below, which CapabilitiesOf finds.
type Driver interface {
	// List reports the instances sbf created (names from InstanceName or
	// PoolInstanceName) and those a Labeler labelled, and nothing else.
	List(ctx context.Context) ([]Instance, error)
	Create(ctx context.Context, s Spec) error
	Start(ctx context.Context, s Spec) error
	Stop(ctx context.Context, name string) error
	Delete(ctx context.Context, name string) error
	// Reconfigure applies restart-class changes to a stopped instance.
	Reconfigure(ctx context.Context, s Spec) error
}

// Execer runs commands in running instances.
type Execer interface {
	Exec(ctx context.Context, instance string, req ExecRequest) (ExecResult, error)
}

// Terminal runs a command on a pseudo-terminal in a running instance, as
// `ssh -t` does: what the person types goes in raw, Ctrl-C included, and
// the terminal's output comes back.
type Terminal interface {
	Terminal(ctx context.Context, instance string, req TerminalRequest) (exitCode int, err error)
}

// TerminalRequest is an interactive command. An empty Command opens the
// guest user's login shell.
type TerminalRequest struct {
	Command string
	Term    string // the terminal type, as $TERM names it
	Size    WindowSize
	Resize  <-chan WindowSize // the local window's new sizes
	Stdin   io.Reader
	Stdout  io.Writer // a terminal has one output stream
}

// WindowSize is a terminal's size in character cells.
type WindowSize struct{ Rows, Cols int }

// Copier copies host files and folders into running instances. There is
// no way back through a driver: guest data reaches the host only as an
// ArchiveCopier stream the engine unpacks itself, through hostpath's
// confined writer, so no backend ever writes a host path.
type Copier interface {
	CopyIn(ctx context.Context, instance, localPath, remotePath string) error
}

// ArchiveCopier moves tar archives in and out of running instances, so
// the engine makes and unpacks them on the host itself, confined to the
// folders the caller may use; the backend never opens a host path.
type ArchiveCopier interface {
	// PutArchive unpacks a tar stream into dir in the guest.
	PutArchive(ctx context.Context, instance, dir string, archive io.Reader) error
	// GetArchive writes a tar stream holding path (one entry named after
	// its last element, with everything below it).
	GetArchive(ctx context.Context, instance, path string, archive io.Writer) error
}

// Remover deletes guest paths itself, for a backend whose commands do not
// see guest paths as the guest does (the sim); others are asked to rm.
type Remover interface {
	Remove(ctx context.Context, instance string, paths []string) error
}

// Connector keeps a connection to each running instance open between
// commands: what an exec broker serving many sbf processes relies on.
type Connector interface {
	Execer
	// Alive reports whether the kept-open connection to instance still
	// answers; a broker ends when it does not.
	Alive(instance string) bool
	// Close drops every kept-open connection.
	Close() error
}

// Validator checks, at plan time, that a backend can honour a spec: a
// template, vm_type, mount or port form it cannot is a plan problem
// naming the key, not a failure halfway through an apply.
type Validator interface {
	Validate(ctx context.Context, s Spec) error
}

// Labeler records on an instance, beyond its name, that it is a pool's
// spare and, once adopted, which sandbox owns it; List reports it in
// Instance.Label. An instance carrying sbf's label is listed whatever its
// name (an imported one), so a lost state file is rebuilt from it.
type Labeler interface {
	// MarkSpare records that a pool made instance and that it is ready.
	MarkSpare(ctx context.Context, instance string, s SpareLabel) error
	// Claim records the instance's owner, atomically: of concurrent
	// claims exactly one wins and the others get an error wrapping
	// ErrOwned (a claim for the owner already recorded succeeds again).
	// A missing instance is ErrNotFound.
	Claim(ctx context.Context, instance string, o Owner) error
}

// Warmer opens what a running instance's first command would otherwise
// open (a kept-open connection, a guest shell), so that command does not
// wait for it: an adopted spare's.
type Warmer interface {
	Warm(ctx context.Context, instance string) error
}

// ForceStopper halts an instance at once, without the guest's clean
// shutdown (limactl stop --force): what an expiry does before it deletes
// the VM, as SandboxForge v1's sweeper did, since nothing in a VM about to
// be deleted is worth waiting for. A missing instance is ErrNotFound.
type ForceStopper interface {
	ForceStop(ctx context.Context, instance string) error
}

// HostShell is a backend whose Exec runs commands on this host, not in a
// VM (the sim): sbf never runs its own guest scripts (a Docker install,
// service containers) through it.
type HostShell interface {
	RunsOnHost() bool
}

// SpecError is a spec a backend cannot honour, naming the key.
type SpecError struct {
	Driver string
	Key    string // a sandbox's key as in the configuration: vm_type, ports, template
	Reason string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("%s: the %s driver cannot %s", e.Key, e.Driver, e.Reason)
}

// Env is what a backend is built from: the process's environment and
// sbf's folders, so that tests and SBF_NOW decide them, not globals.
type Env struct {
	Getenv    func(string) string
	Clock     clock.Clock
	StateDir  string // sbf's host-wide state folder
	Workspace string // the workspace root (where a per-workspace backend keeps its world)
	HostOS    string // runtime.GOOS spelling
	HostArch  string // runtime.GOARCH spelling
	Debug     func(format string, args ...any)
	// HostExec is the operator's leave for a backend whose guest commands
	// run on this host (the sim): set only from the process's environment
	// (SBF_ENABLE_SIM=1), never from a workspace file or a request.
	HostExec bool
	// GuestWritable are the folders copies from a sandbox may write (the
	// served workspace roots and the operator's allowed paths; Workspace is
	// one too): nothing there is run as a backend's own program.
	GuestWritable []string
	// WorkspaceHolding is the workspace a host folder lies in, served or
	// not (nil: none is known): a guest may have written there too.
	WorkspaceHolding func(folder string) (root string, ok bool)
	// GuestHostPorts are the host ports a guest may reach whatever its
	// egress mode: the operator's [policy] guest_host_ports.
	GuestHostPorts []int
	// Executable is sbf's own program, which runs the backends' Commands
	// (`Executable NAME ARGS...`): set only by the process root, "" in a
	// process that cannot start them (a command line run in process).
	Executable string
}

// Duration reads a setting holding a positive duration (zero when unset);
// example shows a good value in the error.
func (e Env) Duration(key, example string) (time.Duration, error) {
	v := e.Getenv(key)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as %s", key, v, example)
	}
	return d, nil
}

// DiagnoseWith is a Registration.Diagnose for a backend whose settings are
// read from Env first: settings it cannot read are the one failed check.
func DiagnoseWith[O any](driver string, settings func(Env) (O, error),
	diagnose func(context.Context, O, []Spec) Diagnosis) func(context.Context, Env, []Spec) Diagnosis {
	return func(ctx context.Context, env Env, specs []Spec) Diagnosis {
		o, err := settings(env)
		if err != nil {
			d := Diagnosis{Driver: driver, Summary: "cannot run VMs here yet: see the failed checks"}
			d.Add(CheckFromError("settings", err))
			d.Finish()
			return d
		}
		return diagnose(ctx, o, specs)
	}
}

// Registration is one backend as the registry knows it.
type Registration struct {
	Name string
	// New builds the backend, or says why it cannot be used here
	// (*UnavailableError).
	New func(ctx context.Context, env Env) (Driver, error)
	// Diagnose checks everything the backend needs for these VMs, without
	// stopping at the first problem (sbf doctor). Nil: New's answer is
	// the diagnosis.
	Diagnose func(ctx context.Context, env Env, specs []Spec) Diagnosis
	// PerWorkspace backends are built once per workspace, others once per
	// process.
	PerWorkspace bool
	// TestOnly backends are never a default and are named apart in docs.
	TestOnly bool
	// Remote backends run their VMs elsewhere (a cluster): this host's CPUs,
	// memory and disk are not theirs to check.
	Remote bool
	// AutoRank is how much the backend wants to be what [vm] driver = "auto"
	// names on a host (runtime.GOOS and GOARCH spellings): the linked
	// backend ranking it highest is (Auto). Nil or 0: never.
	AutoRank func(os, arch string) int
	// VMType is the vm_type the backend's VMs run on a host when no layer
	// names one ("": none); a spec's default is its "auto" backend's.
	VMType func(os, arch string) string
	// Zero is a nil pointer of the type New returns: what the backend can
	// do beyond the lifecycle is CapabilitiesOf(Zero), known without
	// building it (never call them). Nil: nothing is known until built.
	Zero Driver
	// Settings are the backend's own table, [vm.NAME] and
	// [sandboxes.S.NAME], which a spec validates without linking the
	// backend (Linked): each key with its doc and what changing it does to
	// an instance (Spec.Backend carries the values).
	Settings []Setting
	// SettingsDoc describes the table, for the JSON Schema.
	SettingsDoc string
	// V1 says how SandboxForge v1's VMs become this backend's sandboxes.
	V1 V1Import
	// Commands are hidden subcommands of sbf the backend runs in processes
	// of its own (vz's VM supervisor): the command line offers each, and
	// the backend starts them with Env.Executable.
	Commands []Command
}

// Command is a hidden subcommand of sbf a backend runs in a process of
// its own, `sbf NAME ARGS...`: the command line checks only the number of
// arguments and leaves SIGINT and SIGTERM to it.
type Command struct {
	Name  string // a word no other linked backend's command uses
	Usage string // its arguments, for the usage line (INSTANCE_DIR)
	Short string
	Args  int // how many arguments it takes
	// Run runs the command; SIGINT and SIGTERM cancel ctx.
	Run func(ctx context.Context, args []string) error
}

// Setting is one key of a backend's settings table. Every value is a
// string.
type Setting struct {
	Key    string
	Doc    string
	Effect Effect // NoEffect: the change is only recorded; say Restart or Replace when the instance must follow it
}

// V1Import is how sbf import-v1 takes over SandboxForge v1's VMs with a
// backend.
type V1Import struct {
	// Backends are v1's backend_name values (its SANDBOX_BACKEND) whose
	// VMs this backend runs.
	Backends []string
	// VMTypes are the vm_type values an imported VM may keep: one
	// reporting another is not imported, since a sandbox could not be
	// declared as it is and the next plan would replace it.
	VMTypes []string
	// ListsEveryName says List reports every instance under any name (the
	// sim's whole world), so v1's VMs are seen without an AllLister.
	ListsEveryName bool
}

var registry = struct {
	sync.RWMutex
	m map[string]Registration
}{m: map[string]Registration{}}

// Register adds a backend; each backend package calls it from its
// register.go. A name registered twice, or a name or setting a spec could
// not say (names.Backend, names.BackendSetting), is a programming error.
func Register(r Registration) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[r.Name]; dup || !names.Backend(r.Name) || r.Name == "auto" || r.New == nil {
		panic("drivers: bad or duplicate registration " + r.Name)
	}
	for n, s := range r.Settings {
		dup := slices.ContainsFunc(r.Settings[:n], func(o Setting) bool { return o.Key == s.Key })
		if dup || !names.BackendSetting(s.Key) {
			panic("drivers: bad or duplicate setting " + r.Name + "." + s.Key)
		}
	}
	for _, c := range r.Commands {
		if c.Name == "" || strings.ContainsAny(c.Name, " \t") || c.Run == nil || commandNamed(c.Name) {
			panic("drivers: bad or duplicate command " + r.Name + "." + c.Name)
		}
	}
	r.Settings, r.Commands = slices.Clone(r.Settings), slices.Clone(r.Commands)
	registry.m[r.Name] = r
}

// commandNamed says whether a registered backend offers a command of this
// name; the caller holds the registry's lock.
func commandNamed(name string) bool {
	for _, r := range registry.m {
		if slices.ContainsFunc(r.Commands, func(c Command) bool { return c.Name == name }) {
			return true
		}
	}
	return false
}

// Commands are the hidden subcommands the registered backends offer,
// sorted by name.
func Commands() []Command {
	registry.RLock()
	defer registry.RUnlock()
	var out []Command
	for _, r := range registry.m {
		out = append(out, r.Commands...)
	}
	slices.SortFunc(out, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// V1Backends maps SandboxForge v1's backend names to the linked backends
// that run their VMs (Registration.V1).
func V1Backends() map[string]string {
	registry.RLock()
	defer registry.RUnlock()
	out := map[string]string{}
	for name, r := range registry.m {
		for _, v1 := range r.V1.Backends {
			out[v1] = name
		}
	}
	return out
}

// Lookup finds a registered backend.
func Lookup(name string) (Registration, bool) {
	registry.RLock()
	defer registry.RUnlock()
	r, ok := registry.m[name]
	return r, ok
}

// Names lists the registered backends, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Sorted(maps.Keys(registry.m))
}

// Auto is the backend [vm] driver = "auto" names on a host: the linked one
// ranking it highest (Registration.AutoRank; of equals, the first by name),
// "" when none wants to be; and the vm_type its VMs run there by default.
func Auto(os, arch string) (backend, vmType string) {
	best := 0
	for _, name := range Names() {
		r, _ := Lookup(name)
		if r.AutoRank == nil {
			continue
		}
		if rank := r.AutoRank(os, arch); rank > best {
			best, backend, vmType = rank, name, ""
			if r.VMType != nil {
				vmType = r.VMType(os, arch)
			}
		}
	}
	return backend, vmType
}

// Linked is the registry as a workspace spec sees it (spec.Backends): the
// names a driver key may say, what "auto" names on a host and each
// backend's settings table. The engine
// hands it to spec.Load, which never links a backend.
var Linked linked

type linked struct{}

func (linked) Names() []string { return Names() }

func (linked) Auto(os, arch string) (backend, vmType string) { return Auto(os, arch) }

func (linked) Table(backend string) (keys map[string]string, doc string, ok bool) {
	r, ok := Lookup(backend)
	if !ok {
		return nil, "", false
	}
	keys = make(map[string]string, len(r.Settings))
	for _, s := range r.Settings {
		keys[s.Key] = s.Doc
	}
	return keys, r.SettingsDoc, true
}

// NotBuiltIn is the answer for a backend name this build does not have.
func NotBuiltIn(name string) *UnavailableError {
	return &UnavailableError{Driver: name, Reason: "this build of sbf has no " + name + " driver",
		ProbableCause: "backend_unavailable", NextSteps: []string{"use a build of sbf that includes the " + name + " driver"}}
}
