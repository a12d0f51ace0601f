package drivers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Forker copies a running instance, memory and all, into new running
// instances (sbf fork). The engine drives it in three steps, so that it
// decides how many children are made, in which order, and which are
// undone when the fork fails or is cancelled:
//
//  1. SaveForFork, once: the source pauses, its memory is saved and its
//     disk is fixed as it is at that moment (what the children start
//     from), and the source runs on. QEMU: stop, migrate to a file or
//     savevm, a new qcow2 overlay for the source over the frozen disk,
//     cont; vz: Pause, SaveMachineStateToPath, Resume; Hyper-V:
//     Checkpoint-VM.
//  2. ForkImage.StartChild, per child: a new instance named as child.Spec
//     says, its disk a copy-on-write layer over the frozen one (never a
//     file the source or a sibling writes), its memory restored from the
//     saved state, running without a boot, and its identity refreshed
//     (ForkIdentity) before anything of sbf's reaches it; its network
//     policy (child.Spec.Egress, the source's) is enforced as Start
//     enforces one, or the child is not started. QEMU: a qcow2
//     overlay and -incoming from the saved state with a new vmgenid; vz:
//     an APFS clone of the disk and RestoreMachineStateFromURL; Hyper-V:
//     a differencing disk and the checkpoint's saved state.
//  3. ForkImage.Release, once no more children are made: the saved memory
//     goes; what the running children stand on stays with them (the
//     backend removes it with the last instance that needs it).
//
// A backend that cannot fork this particular instance (its VM type, a
// host too old) answers ForkUnsupported from SaveForFork, before anything
// is made; one without the capability is refused by the engine with
// NoFork. A child a StartChild cut short (an error, a cancelled context)
// may be left half-made: the engine deletes it as any instance.
type Forker interface {
	// SaveForFork pauses the running instance source (its spec as it
	// runs), saves its state once, resumes it and returns the saved state.
	SaveForFork(ctx context.Context, source Spec) (ForkImage, error)
}

// Templater keeps a fork's saved state past the fork: a pool's memory
// template is an instance saved once and stopped, which creates start
// from as a fork's children do (a create that boots nothing). The state
// lives with the instance (its folder) and goes when it is deleted; the
// instance is never started again, so what children stand on never
// changes.
type Templater interface {
	// SaveTemplate saves the running instance source as SaveForFork does
	// and stops it: from then on it is a template.
	SaveTemplate(ctx context.Context, source Spec) error
	// OpenTemplate is the saved state of the template instance name. Its
	// StartChild makes a child as a fork's does; its Release keeps the
	// state (the template's deletion removes it). A name that is no
	// template is ErrNotFound.
	OpenTemplate(ctx context.Context, name string) (ForkImage, error)
}

// ForkImage is a running instance's state, saved once, that children
// start from.
type ForkImage interface {
	// StartChild makes one child, running, from the saved state.
	StartChild(ctx context.Context, child ForkChild) error
	// Release drops the saved state; children keep what they run on.
	Release(ctx context.Context) error
}

// PauseReporter is a ForkImage that knows how long its source stood still
// for the save (a live save pauses it for the switch-over alone); without
// it the engine counts the whole save.
type PauseReporter interface {
	Paused() time.Duration
}

// ForkChild is one new instance a fork makes.
type ForkChild struct {
	// Spec is the child's VM: its own name, the source's shape, network
	// policy and mounts (the engine declares it so).
	Spec     Spec
	Identity ForkIdentity
}

// ForkIdentity is what makes a child its own machine rather than a second
// copy of its source: decided by the engine, applied by the backend as the
// child starts, before the child's first command. A new kept connection
// (SSH) goes with it: the backend never hands a child the source's.
type ForkIdentity struct {
	// Hostname is the child's own (its instance name).
	Hostname string `json:"hostname"`
	// MachineID is /etc/machine-id's new value: 32 lowercase hex digits.
	MachineID string `json:"machine_id"`
	// Seed is fresh randomness (64 hex digits) the guest mixes into its
	// random pool, so two children never draw the same bytes after the
	// fork; a backend with a VM generation ID (QEMU's vmgenid, Hyper-V's)
	// changes that too, which Linux 5.18+ takes as a reason to reseed.
	Seed string `json:"seed"`
	// Now is the host's time as the child starts: the guest's clock,
	// stopped at the save, is set to it (a backend that runs GuestScript
	// later sets Now to the time it runs it).
	Now time.Time `json:"now"`
}

// NewForkIdentity draws a child's identity: its hostname (name as a host
// name: lowercase letters, digits and '-', at most 63), a new machine id
// and a new seed from the host's random source.
func NewForkIdentity(name string, now time.Time) (ForkIdentity, error) {
	var b [16 + 32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return ForkIdentity{}, fmt.Errorf("drawing a fork child's machine id: %w", err)
	}
	return ForkIdentity{Hostname: hostLabel(name), MachineID: hex.EncodeToString(b[:16]),
		Seed: hex.EncodeToString(b[16:]), Now: now.UTC()}, nil
}

// hostLabel is name as one DNS label: what GuestScript writes unquoted.
func hostLabel(name string) string {
	label := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, name)
	label = strings.Trim(label[:min(len(label), 63)], "-")
	if label == "" {
		return "sbf-fork"
	}
	return label
}

// GuestScript is the shell a Linux guest runs, as root, to take the
// identity: a backend that refreshes it from inside the guest (over its
// new connection) runs it before reporting the child started. Every value
// is hex, a name the engine made or a number, so nothing is quoted from a
// request.
func (id ForkIdentity) GuestScript() string {
	lines := []string{
		"set -e",
		"printf '%s\\n' " + id.Seed + " > /dev/urandom",
		"printf '%s\\n' " + id.MachineID + " > /etc/machine-id",
		"hostname " + id.Hostname,
		"printf '%s\\n' " + id.Hostname + " > /etc/hostname",
		// The host name resolves where the old one did (Debian's 127.0.1.1
		// line): sudo looks its host up on every call, and an unknown name
		// waits on DNS (seconds under emulation).
		"sed -i '/^127\\.0\\.1\\.1[[:space:]]/d' /etc/hosts",
		"printf '127.0.1.1\\t%s\\n' " + id.Hostname + " >> /etc/hosts",
		fmt.Sprintf("date -u -s @%d >/dev/null", id.Now.Unix()),
	}
	return strings.Join(lines, "\n") + "\n"
}

// ForkUnsupported says a backend cannot fork, why (a phrase after "the
// NAME driver") and what to do instead.
func ForkUnsupported(driver, reason string, steps ...string) error {
	return &UnsupportedError{Code: coded.ForkUnsupported, Driver: driver, Reason: reason, NextSteps: steps}
}

// NoFork is FORK_UNSUPPORTED for a backend without the capability: the
// next step is a copy of the disk, which loses the source's memory (its
// processes) but is what those backends can do. Where each could fork
// later: vz's SaveMachineStateToPath/RestoreMachineStateFromURL (macOS
// 14+), Hyper-V's checkpoints, KubeVirt's VirtualMachineSnapshot and
// clone API, Lima through QEMU (docs/drivers.md, Fork).
func NoFork(driver, source string) error {
	return ForkUnsupported(driver, "cannot fork a running sandbox from its memory in this build of sbf",
		fmt.Sprintf("clone it from a disk snapshot instead: sbf snapshot create %s NAME, then "+
			"sbf clone %s --snapshot NAME (MCP: snapshot_instance, then clone_instance with snapshot)", source, source),
		fmt.Sprintf("or clone its disk as it is now: sbf clone %s (its processes start again from a boot)", source))
}
