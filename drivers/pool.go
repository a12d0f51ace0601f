package drivers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PoolPrefix starts the name of every spare a pool keeps booted:
// sbf-pool-<8 hex of its shape>-<n>. An adopted spare keeps its name; its
// ownership label says whose it is now.
const PoolPrefix = Prefix + "pool-"

// PoolInstanceName names the n-th spare of a shape (Shape's hash).
func PoolInstanceName(shape string, n int) string {
	return PoolPrefix + shape + "-" + strconv.Itoa(n)
}

// ParsePoolName splits a name made by PoolInstanceName; ok is false for
// anything else.
func ParsePoolName(name string) (shape string, n int, ok bool) {
	rest, found := strings.CutPrefix(name, PoolPrefix)
	if !found || len(rest) < 10 || rest[8] != '-' || !isHex(rest[:8]) {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[9:])
	if err != nil || n < 1 || strconv.Itoa(n) != rest[9:] {
		return "", 0, false
	}
	return rest[:8], n, true
}

// ManagedName reports whether sbf makes instances of this name: a
// sandbox's derived name or a pool's spare.
func ManagedName(name string) bool {
	if _, _, ok := ParseInstanceName(name); ok {
		return true
	}
	_, _, ok := ParsePoolName(name)
	return ok
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// Shape is the part of a spec a spare is made with and an adopter must
// match exactly: the backend and everything that needs a new VM or a
// restart to change, but no mounts or ports (spares have none; an adopter
// that wants them reconfigures after adoption) and no name. It returns 8
// hex digits.
func Shape(driver string, s Spec) string {
	key, _ := json.Marshal(struct {
		Driver    string  `json:"driver"`
		CPUs      int     `json:"cpus"`
		MemoryGiB float64 `json:"memory_gib"`
		DiskGiB   float64 `json:"disk_gib"`
		Arch      string  `json:"arch"`
		VMType    string  `json:"vm_type"`
		Template  string  `json:"template"`
		Image     Image   `json:"image"`
		// Omitted when empty, so the shapes of backends without settings are unchanged.
		Backend map[string]string `json:"backend,omitempty"`
		// A guest's network is fixed when it boots: a spare started without
		// a policy must never become a restricted sandbox.
		Egress *Egress `json:"egress,omitempty"`
	}{driver, s.CPUs, s.MemoryGiB, s.DiskGiB, s.Arch, s.VMType, s.Template, s.Image, s.Backend, s.Egress})
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:])[:8]
}

// Label is what sbf records on an instance beyond its name (Labeler): the
// pool that made it a spare, and once a sandbox adopted it, its owner. A
// lost state file is rebuilt from it, as from derived names.
type Label struct {
	Spare *SpareLabel `json:"spare,omitempty"`
	Owner *Owner      `json:"owner,omitempty"`
}

// SpareLabel is written once a pool's new spare is booted and ready.
type SpareLabel struct {
	Pool string `json:"pool"`
	// Workspace is the id of the workspace whose [pool] table made it:
	// that workspace deletes it when the table goes.
	Workspace string    `json:"workspace_id"`
	Shape     string    `json:"shape"`
	CreatedAt time.Time `json:"created_at"`
	// IdleUntil is when it is replaced if nobody adopted it (max_idle);
	// every sbf run that lists it may delete it then.
	IdleUntil time.Time `json:"idle_until"`
	// Docker is the guest's docker command when the container runtime
	// was made ready in the spare ("" when not).
	Docker string `json:"docker,omitempty"`
	// Memory marks a memory template (drivers.Templater): saved and
	// stopped, never adopted; creates of its shape start from it.
	Memory bool `json:"memory,omitempty"`
}

// Owner is the sandbox an instance belongs to. Retired marks a spare
// claimed for deletion: it belongs to nobody and any run deletes it.
type Owner struct {
	WorkspaceID string `json:"workspace_id,omitempty"`
	Sandbox     string `json:"sandbox,omitempty"`
	Retired     bool   `json:"retired,omitempty"`
	// Spare says the claim adopts a pool's ready spare: an instance of that
	// name that is not one (its replacement, still being made after the
	// spare the adopter saw was deleted) is ErrNotFound, never a booting VM.
	Spare bool      `json:"spare,omitempty"`
	Since time.Time `json:"since,omitzero"`
}

// Same reports whether two owners are the same sandbox (or both retired).
func (o Owner) Same(p Owner) bool {
	return o.Retired == p.Retired && o.WorkspaceID == p.WorkspaceID && o.Sandbox == p.Sandbox
}

func (o Owner) String() string {
	if o.Retired {
		return "retired (being deleted)"
	}
	return fmt.Sprintf("sandbox %s of workspace %s", o.Sandbox, o.WorkspaceID)
}

// OwnedBy reports whether l names that sandbox of that workspace as owner.
func (l *Label) OwnedBy(workspaceID, sandbox string) bool {
	return l != nil && l.Owner != nil && !l.Owner.Retired && l.Owner.WorkspaceID == workspaceID &&
		l.Owner.Sandbox == sandbox
}

// ErrOwned is wrapped by a claim of an instance someone else owns.
var ErrOwned = errors.New("instance is owned by another sandbox")

// OwnedError is a claim that lost: the instance already has this owner.
type OwnedError struct {
	Instance string
	Owner    Owner
}

func (e *OwnedError) Error() string {
	return fmt.Sprintf("%s already belongs to %s", e.Instance, e.Owner)
}

func (e *OwnedError) Unwrap() error { return ErrOwned }

// Label files, kept in an instance's folder (Lima, vz) or beside it in a
// world (sim).
const (
	SpareLabelFile = "sbf-spare.json"
	OwnerLabelFile = "sbf-owner.json"
)

// ReadLabelDir reads the label files in dir; nil when there are none.
func ReadLabelDir(dir string) (*Label, error) {
	var l Label
	found := false
	for name, into := range map[string]any{SpareLabelFile: &l.Spare, OwnerLabelFile: &l.Owner} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the label of %s: %w", dir, err)
		}
		if err := json.Unmarshal(data, into); err != nil {
			return nil, fmt.Errorf("label %s is corrupt: %w", filepath.Join(dir, name), err)
		}
		found = true
	}
	if !found {
		return nil, nil
	}
	return &l, nil
}

// RemoveLabels deletes the label files in dir: a copy of an instance's
// folder (a clone) is neither a spare nor its source's sandbox's.
func RemoveLabels(dir string) error {
	var errs []error
	for _, name := range []string{SpareLabelFile, OwnerLabelFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WriteSpareLabel records s in dir, replacing what was there, atomically.
func WriteSpareLabel(dir string, s SpareLabel) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return writeAtomic(dir, SpareLabelFile, data, false)
}

// ClaimDir records o as the owner in dir, atomically: the owner file is
// made by a hard link, which fails when it exists, so of concurrent claims
// exactly one wins. A claim for the owner already recorded succeeds
// again; any other gets an *OwnedError. A dir that does not exist is
// ErrNotFound.
func ClaimDir(instance, dir string, o Owner) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("claiming %s: %w", instance, ErrNotFound)
	}
	if _, err := os.Stat(filepath.Join(dir, SpareLabelFile)); o.Spare && errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("claiming %s: not a ready spare: %w", instance, ErrNotFound)
	}
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	err = writeAtomic(dir, OwnerLabelFile, data, true)
	if !errors.Is(err, fs.ErrExist) {
		if err != nil {
			return fmt.Errorf("claiming %s: %w", instance, err)
		}
		return nil
	}
	cur, rerr := ReadLabelDir(dir)
	if rerr != nil {
		return fmt.Errorf("claiming %s: %w", instance, rerr)
	}
	if cur != nil && cur.Owner != nil && cur.Owner.Same(o) {
		return nil
	}
	var owner Owner
	if cur != nil && cur.Owner != nil {
		owner = *cur.Owner
	}
	return &OwnedError{Instance: instance, Owner: owner}
}

// writeAtomic writes a complete file under a temporary name, syncs it,
// then renames it into place (replace) or links it there (exclusive: an
// existing file is fs.ErrExist and stays as it was).
func writeAtomic(dir, name string, data []byte, exclusive bool) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	dst := filepath.Join(dir, name)
	if exclusive {
		if err := os.Link(tmp.Name(), dst); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fs.ErrExist
			}
			return err
		}
	} else if err := os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil { // make the new name durable; not possible on Windows
		d.Sync()
		d.Close()
	}
	return nil
}
