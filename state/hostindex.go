package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/atomicfile"
)

// HostIndex is the host-wide list of instances sbf has leased, across
// workspaces: which workspace owns an instance and until when. It lets
// the instance cap ignore expired leases, and lets MCP instance ids find
// their workspace after a restart. One small file per instance, so
// writers of different instances never contend.
type HostIndex struct{ dir string }

// IndexEntry is one instance's line in the host index.
type IndexEntry struct {
	Instance      string    `json:"instance"`
	Sandbox       string    `json:"sandbox"`
	Driver        string    `json:"driver"`
	WorkspaceRoot string    `json:"workspace_root"`
	WorkspaceID   string    `json:"workspace_id"`
	ExpiresAt     time.Time `json:"expires_at,omitzero"` // zero (absent): no lease (destroyed, expired)
}

// OpenHostIndex uses dir (created when first written).
func OpenHostIndex(dir string) *HostIndex { return &HostIndex{dir: filepath.Join(dir, "instances")} }

// Dir is where the index lives.
func (h *HostIndex) Dir() string { return h.dir }

// Put records or replaces an entry.
func (h *HostIndex) Put(e IndexEntry) error {
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return fmt.Errorf("creating host index %s: %w", h.dir, err)
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(h.dir, e.Instance+".json"), data, 0o644)
}

// Remove drops an instance's entry; a missing one is fine.
func (h *HostIndex) Remove(instance string) error {
	err := os.Remove(filepath.Join(h.dir, instance+".json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s from the host index: %w", instance, err)
	}
	return nil
}

// Prune removes a workspace's entries for sandboxes it neither declares
// nor records (keep says which it does): a VM deleted and its record gone
// (after [lease] keep_records), the entry goes too. An ended sandbox whose
// record is kept keeps its entry, so its id still finds its workspace
// (INSTANCE_TERMINAL, list_instances' include_expired).
func (h *HostIndex) Prune(workspaceID string, keep func(sandbox string) bool) error {
	all, err := h.All()
	if err != nil {
		return err
	}
	for _, e := range all {
		if e.WorkspaceID == workspaceID && e.ExpiresAt.IsZero() && !keep(e.Sandbox) {
			if err := h.Remove(e.Instance); err != nil {
				return err
			}
		}
	}
	return nil
}

// All lists every entry, sorted by instance name. Unreadable entries are
// skipped: the index is a cache of facts the workspaces also hold.
func (h *HostIndex) All() ([]IndexEntry, error) {
	names, err := os.ReadDir(h.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading host index %s: %w", h.dir, err)
	}
	var out []IndexEntry
	for _, n := range names {
		if !strings.HasSuffix(n.Name(), ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(h.dir, n.Name()))
		if err != nil {
			continue
		}
		var e IndexEntry
		if json.Unmarshal(data, &e) == nil && e.Instance != "" {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out, nil
}

// Lookup finds an entry by instance name or by sandbox name (MCP instance
// ids are sandbox names, unique on the host).
func (h *HostIndex) Lookup(key string) (IndexEntry, bool) {
	all, _ := h.All()
	for _, e := range all {
		if e.Instance == key || e.Sandbox == key {
			return e, true
		}
	}
	return IndexEntry{}, false
}
