package drivers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/names"
)

// Snapshotter keeps named snapshots of an instance: its disk, and its
// running state where the backend saves that too (Lima's QEMU savevm).
// A snapshot lives with its instance and is deleted with it. Names are
// checked by the engine (ValidSnapshotName) before any backend sees them;
// a backend that cannot snapshot this particular instance (Lima with
// vm_type vz) answers an error from SnapshotUnsupported.
type Snapshotter interface {
	// Snapshot saves the instance as it is now under name, which no
	// snapshot of it has yet.
	Snapshot(ctx context.Context, instance, name string) (SnapshotInfo, error)
	// RestoreSnapshot brings the instance back to the snapshot: what was
	// written since is gone. A running instance keeps running (or is
	// restarted) from it.
	RestoreSnapshot(ctx context.Context, instance, name string) error
	// DeleteSnapshot removes one snapshot; a missing one wraps
	// ErrSnapshotNotFound.
	DeleteSnapshot(ctx context.Context, instance, name string) error
	// ListSnapshots reports the instance's snapshots, sorted by name.
	ListSnapshots(ctx context.Context, instance string) ([]SnapshotInfo, error)
}

// SnapshotPorter moves a snapshot out of its instance into a host file
// and back in, so it outlives the instance (which deletes its snapshots
// with it). The engine chooses and checks both files: an export's dst is
// a file it created, empty, in a folder it judged; an import's src is a
// regular file there. A backend without it answers SnapshotUnsupported.
type SnapshotPorter interface {
	// ExportSnapshot writes the instance's snapshot name into the file
	// dst, standalone (nothing else is needed to import it).
	ExportSnapshot(ctx context.Context, instance, name, dst string) error
	// ImportSnapshot makes src, an export by the same backend, the
	// instance's snapshot name, which it has not yet; the instance's
	// current disk is left as it is.
	ImportSnapshot(ctx context.Context, instance, name, src string) error
}

// SnapshotInfo is what a backend knows of one snapshot; zero fields are
// ones it does not report.
type SnapshotInfo struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	SizeBytes int64     `json:"size_bytes,omitempty"`
}

// Cloner makes a new instance whose disk starts as a copy of another's.
type Cloner interface {
	// Clone creates dst (stopped, as dst says: its name, resources,
	// network) from the disk of source as it is now, or as it was in
	// source's snapshot named snapshot ("": now). Snapshots of source are
	// not carried over. A backend that can copy only a stopped disk stops
	// a running source first and starts it again after (source is its
	// spec, so it starts as it ran).
	Clone(ctx context.Context, source Spec, snapshot string, dst Spec) error
}

// ErrSnapshotNotFound is a snapshot the instance does not have.
var ErrSnapshotNotFound = errors.New("snapshot not found")

// ErrStopFirst is an operation a backend does only on a stopped
// instance (Lima's qemu-img on a disk QEMU holds open): the engine stops
// the instance, asks again, and starts it with its spec after.
var ErrStopFirst = errors.New("the instance must be stopped for this")

// MaxSnapshotName bounds a snapshot's name: it becomes a file name or a
// QEMU tag, and is repeated in every answer about it.
const MaxSnapshotName = names.MaxSnapshot

// ValidSnapshotName reports whether name may name a snapshot: 1 to 64
// letters, digits, '.', '-' and '_', starting with a letter or digit, so
// it is never a path (no separator, no "..") nor an option ("-x").
func ValidSnapshotName(name string) bool { return names.Snapshot(name) }

// CheckSnapshotName is ValidSnapshotName as the error a caller gets.
func CheckSnapshotName(field, name string) error {
	if ValidSnapshotName(name) {
		return nil
	}
	return coded.New(coded.InvalidArguments, map[string]any{"field": field, "value": coded.Clip(name),
		"max": MaxSnapshotName},
		"%s %q is not a snapshot name (1-%d letters, digits, '.', '-' and '_', starting with a letter or digit)",
		field, coded.Clip(name), MaxSnapshotName)
}

// UnsupportedError is a capability a backend lacks (at all, or for this
// VM): snapshots and clones, forks. Code says which; Reason is a phrase
// after "the NAME driver"; NextSteps say what would do instead.
type UnsupportedError struct {
	Code      string
	Driver    string
	Reason    string
	NextSteps []string
}

func (e *UnsupportedError) Error() string {
	msg := fmt.Sprintf("the %s driver %s", e.Driver, e.Reason)
	if len(e.NextSteps) > 0 {
		msg += " (next: " + strings.Join(e.NextSteps, "; ") + ")"
	}
	return msg
}

// Naming is the error with the instance's name, which a backend knows it
// by, replaced by the sandbox's in its reason and next steps: the commands
// it suggests take sandbox names (a fork's child's instance name is its
// source's followed by the child's suffix, so it follows too).
func (e *UnsupportedError) Naming(instance, sandbox string) *UnsupportedError {
	named := *e
	named.Reason = strings.ReplaceAll(e.Reason, instance, sandbox)
	named.NextSteps = make([]string, len(e.NextSteps))
	for i, step := range e.NextSteps {
		named.NextSteps[i] = strings.ReplaceAll(step, instance, sandbox)
	}
	return &named
}

// Coded is the error's coded form (SNAPSHOT_UNSUPPORTED, FORK_UNSUPPORTED).
func (e *UnsupportedError) Coded() *coded.Error {
	return coded.New(e.Code, map[string]any{"driver": e.Driver, "reason": e.Reason,
		"next_steps": e.NextSteps}, "%s", e.Error())
}

// SnapshotUnsupported says a backend cannot snapshot or clone, why (a
// phrase after "the NAME driver": "keeps no snapshots of vm_type vz"),
// and what to do instead.
func SnapshotUnsupported(driver, reason string, steps ...string) error {
	return &UnsupportedError{Code: coded.SnapshotUnsupported, Driver: driver, Reason: reason, NextSteps: steps}
}

// NoSnapshots is SNAPSHOT_UNSUPPORTED for a backend without the capability. What each could use:
// Hyper-V's Checkpoint-VM/Restore-VMCheckpoint, Code-Hex/vz's
// SaveMachineStateToPath (macOS 14+), KubeVirt's VirtualMachineSnapshot;
// none is wired in this build.
func NoSnapshots(driver string) error {
	return SnapshotUnsupported(driver, "keeps no snapshots and makes no clones in this build of sbf",
		`declare the sandbox with driver = "lima" and vm_type = "qemu" to snapshot it (clones: any lima VM)`,
		"or keep what matters outside the VM: sbf cp, collect_artifacts")
}
