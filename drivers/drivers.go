// Package drivers holds what the engine and every backend share: the
// description of a VM to create, what a backend reports about one, the
// derived instance names that mark what sbf owns, and the errors backends
// return. The interfaces themselves are declared by their consumers
// (reconcile, guest).
package drivers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/progress"
)

// Spec is the VM a sandbox wants.
type Spec struct {
	Name      string   `json:"name"`
	CPUs      int      `json:"cpus"`
	MemoryGiB float64  `json:"memory_gib"`
	DiskGiB   float64  `json:"disk_gib"`
	Arch      string   `json:"arch,omitempty"`
	VMType    string   `json:"vm_type,omitempty"`
	Template  string   `json:"template,omitempty"`
	Image     Image    `json:"image,omitzero"`
	Mounts    []string `json:"mounts,omitempty"`
	Ports     []string `json:"ports,omitempty"`
	// Emulation says whether software emulation may stand in for
	// hardware virtualization (auto, never, always). It decides how a VM
	// starts, not what it is, so it is no reason to restart one and
	// Equal ignores it.
	Emulation string `json:"emulation,omitempty"`
	// Backend holds settings for this spec's backend alone, by key as the configuration
	// names them ([vm.kubevirt] for kubevirt); other backends ignore them.
	Backend map[string]string `json:"backend,omitempty"`
	// Egress narrows the guest's network ([network]); nil leaves it as the
	// backend gives it. A backend that cannot enforce it says so
	// (EgressEnforcer); none may run the VM with it unenforced.
	Egress *Egress `json:"egress,omitempty"`
	// LeaseEnd, on a create, is when the sandbox's lease ends: a backend that records leases
	// on its instances (LeaseRecorder) writes it with the instance's first write, so an
	// instance never exists without its lease however the creating sbf dies. It belongs to
	// the create, not to what the VM is: never compared, never recorded as the VM's spec
	// (the record's lease is the sandbox's).
	LeaseEnd *time.Time `json:"lease_end,omitempty"`
}

// Egress is a VM's network policy: Mode "deny" (no route out) or
// "allowlist" (only through sbf's egress proxy, to what Allow lists).
type Egress struct {
	Mode  string   `json:"mode"`
	Allow []string `json:"allow,omitempty"`
}

// Equal reports whether two policies are the same; nil is "allow".
func (e *Egress) Equal(o *Egress) bool {
	if e == nil || o == nil {
		return e == o
	}
	return e.Mode == o.Mode && slices.Equal(e.Allow, o.Allow)
}

// String describes a policy in plan causes.
func (e *Egress) String() string {
	switch {
	case e == nil:
		return "allow"
	case e.Mode == "allowlist":
		return "allowlist [" + strings.Join(e.Allow, " ") + "]"
	}
	return e.Mode
}

// LeaseRecorder is a backend that records a sandbox's lease end on its
// instance (a cluster object's annotation), for whoever looks there.
type LeaseRecorder interface {
	RecordLease(ctx context.Context, instance string, expiresAt time.Time) error
}

// EgressLogger is a backend whose network policies leave a decision log
// (egress.ReadLog's format) at a path of the host's.
type EgressLogger interface {
	EgressLog(instance string) string
}

// GuardLogger is a backend that keeps its guests off the host's own
// services and logs each refusal (egress.ReadLog's format) at a path of
// the host's: part of what `sbf egress log` shows, whatever the mode.
type GuardLogger interface {
	GuardLog(instance string) string
}

// EgressEnforcer is a backend that can enforce a network policy outside
// the guest. EnforceEgress says whether it can for this spec on this host:
// nil, or an error saying why not and what to do (the engine reports it as
// POLICY_UNSUPPORTED). Backends without it enforce nothing.
type EgressEnforcer interface {
	EnforceEgress(ctx context.Context, s Spec) error
}

// PolicyError is EnforceEgress's answer when a backend enforces policies but not this
// one, with what would work instead: the engine puts NextSteps before its own.
type PolicyError struct {
	Driver    string
	Reason    string
	NextSteps []string
}

func (e *PolicyError) Error() string { return e.Reason }

// Image is the guest image: a disk (with optional digest) or, for direct
// kernel boot, a raw root disk with kernel and initrd. Paths are absolute.
type Image struct {
	Location      string `json:"location,omitempty"`
	Digest        string `json:"digest,omitempty"`
	Kernel        string `json:"kernel,omitempty"`
	KernelCmdline string `json:"kernel_cmdline,omitempty"`
	Initrd        string `json:"initrd,omitempty"`
}

// String names the image in plan causes.
func (i Image) String() string {
	if i.Location == "" {
		return "(template)"
	}
	return i.Location
}

// Status is a backend's view of an instance.
type Status string

const (
	Running Status = "running"
	Stopped Status = "stopped"
	// Broken instances exist but cannot be started as they are (a create
	// interrupted halfway, a missing disk); the planner replaces them.
	Broken Status = "broken"
	// Booting instances run, but their guest is not ready for what a start
	// waits for (SSH, cloud-init done, the user's groups): a start cut short
	// left it so. Only Running is usable; the planner finishes the start.
	Booting Status = "booting"
)

// ErrBooting is what commands, copies and terminals of a booting instance
// return (wrapped), nothing run: the data plane waits for the boot.
var ErrBooting = errors.New("the VM is still booting")

// Instance is what a backend lists about one VM it runs.
type Instance struct {
	Name   string `json:"name"`
	Driver string `json:"driver"`
	Status Status `json:"status"`
	// Reported holds what the backend says the VM has; zero fields are
	// ones this backend does not report.
	Reported Spec   `json:"reported"`
	SSH      string `json:"ssh,omitempty"` // host:port when known
	// Label is what sbf recorded on it beyond its name (Labeler): whose
	// it is, or which pool keeps it as a spare. Nil when nothing.
	Label *Label `json:"label,omitempty"`
	// Created is when the backend made it (zero: it does not say).
	Created time.Time `json:"created,omitzero"`
	// BootStep is what a Booting instance's boot waits for now, if known.
	BootStep string `json:"boot_step,omitempty"`
	// HeldByAnother marks an instance another person holds where a backend is shared (a
	// cluster namespace a team uses): listed, so it is seen, but counted against this host's
	// instance cap only when one of its sandboxes runs in it. A ready spare of theirs may be
	// adopted (plan.Observed.Teammates); the backend's claim makes it this person's.
	HeldByAnother bool `json:"held_by_another,omitempty"`
	// Holder names the person holding it where a backend is shared (its claimer, else its
	// maker), and LeaseEnd when its lease ends as the backend records it (a cluster's
	// controller deletes it then): who holds what until when, the same for every teammate.
	Holder   string    `json:"holder,omitempty"`
	LeaseEnd time.Time `json:"lease_end,omitzero"`
}

// ErrNotFound is returned for operations on an instance that does not
// exist. Deleting a missing instance is not an error for the engine.
var ErrNotFound = errors.New("instance not found")

// UnavailableError says a backend cannot be used on this host, why, and
// what to do about it (BACKEND_UNAVAILABLE).
type UnavailableError struct {
	Driver        string
	Reason        string
	ProbableCause string   // v1 vocabulary: backend_binary_missing, unsupported_host_os, …
	NextSteps     []string // what the user can do, in order
}

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("%s driver unavailable: %s", e.Driver, e.Reason)
	if len(e.NextSteps) > 0 {
		msg += " (next: " + strings.Join(e.NextSteps, "; ") + ")"
	}
	return msg
}

// Prefix starts every instance name sbf creates; nothing else is touched.
const Prefix = "sbf-"

// InstanceName derives a sandbox's backend name: sbf-<first 8 hex of the
// workspace id>-<sandbox>. Being derived, it lets a lost state file be
// rebuilt from what the backends list.
func InstanceName(workspaceID, sandbox string) string {
	return Prefix + WorkspaceTag(workspaceID) + "-" + sandbox
}

// WorkspaceTag is the part of instance names that names the workspace.
func WorkspaceTag(workspaceID string) string {
	hex := strings.TrimPrefix(workspaceID, "ws_")
	if len(hex) > 8 {
		hex = hex[:8]
	}
	return hex
}

// ParseInstanceName splits a name made by InstanceName. ok is false for
// anything sbf did not create.
func ParseInstanceName(name string) (tag, sandbox string, ok bool) {
	rest, found := strings.CutPrefix(name, Prefix)
	if !found || len(rest) < 10 || rest[8] != '-' {
		return "", "", false
	}
	for _, c := range rest[:8] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return "", "", false
		}
	}
	return rest[:8], rest[9:], true
}

// CanonicalArch names an architecture as Lima and QEMU do
// (x86_64, aarch64), accepting Go's spelling (amd64, arm64) too.
func CanonicalArch(arch string) string {
	switch strings.ToLower(arch) {
	case "amd64", "x86_64", "x86-64":
		return "x86_64"
	case "arm64", "aarch64":
		return "aarch64"
	}
	return arch
}

// WithProgress returns a context whose drivers report progress to fn:
// what a long operation (a VM boot) is waiting for (internal/progress).
func WithProgress(ctx context.Context, fn func(msg string)) context.Context {
	return progress.WithListener(ctx, fn)
}

// Progressf reports progress to the context's listener, if any.
func Progressf(ctx context.Context, format string, args ...any) {
	progress.Reportf(ctx, format, args...)
}

// Check is one thing a backend needs, as `sbf doctor` reports it.
type Check struct {
	Name      string   `json:"name"`
	Status    string   `json:"status"` // ok, warn (works, but worth knowing), fail
	Detail    string   `json:"detail"`
	NextSteps []string `json:"next_steps,omitempty"`
}

// Check statuses.
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// Diagnosis is a backend's answer to "can you run these VMs here, and if
// not, why not and what to do".
type Diagnosis struct {
	Driver  string  `json:"driver"`
	Usable  bool    `json:"usable"`
	Summary string  `json:"summary"`
	Checks  []Check `json:"checks"`
}

// Add records a check; a failed one makes the backend unusable.
func (d *Diagnosis) Add(c Check) {
	d.Checks = append(d.Checks, c)
}

// Require records the check of one requirement: ok with detail, or failed
// with err. It reports whether the requirement is met, so the checks that
// build on it can be skipped.
func (d *Diagnosis) Require(name, detail string, err error) bool {
	if err != nil {
		d.Add(CheckFromError(name, err))
		return false
	}
	d.Add(Check{Name: name, Status: CheckOK, Detail: detail})
	return true
}

// Finish sets Usable from the checks.
func (d *Diagnosis) Finish() {
	d.Usable = true
	for _, c := range d.Checks {
		if c.Status == CheckFail {
			d.Usable = false
		}
	}
}

// CheckFromError turns a failed requirement into a failed check, keeping
// an UnavailableError's next steps.
func CheckFromError(name string, err error) Check {
	var u *UnavailableError
	if errors.As(err, &u) {
		return Check{Name: name, Status: CheckFail, Detail: u.Reason, NextSteps: u.NextSteps}
	}
	return Check{Name: name, Status: CheckFail, Detail: err.Error()}
}

// Coded is the error's BACKEND_UNAVAILABLE form, with v1's details.
func (e *UnavailableError) Coded() *coded.Error {
	return coded.New(coded.BackendUnavailable, map[string]any{
		"backend":        map[string]any{"name": e.Driver, "reason": e.Reason},
		"reason":         e.Reason,
		"probable_cause": e.ProbableCause,
		"next_steps":     e.NextSteps,
	}, "%s", e.Error())
}
