package state

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/internal/readcount"
)

// HostIndex is the host-wide list of instances sbf has leased, across
// workspaces: which workspace owns an instance and until when. It lets
// the instance cap ignore expired leases, and lets MCP instance ids find
// their workspace after a restart. One file (instances.index) read
// incrementally, so a lookup in a long-lived process costs what changed
// since its last look, and a lease renewal of many sandboxes is one write.
type HostIndex struct {
	dir string
	own ownfile.Folder // dir, whose files are sbf's own
	mu  sync.Mutex
	j   journalMap[IndexEntry, struct{}]
}

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
func OpenHostIndex(dir string) *HostIndex {
	own := ownfile.At(dir)
	return &HostIndex{dir: dir, own: own,
		j: journalMap[IndexEntry, struct{}]{journal: journal{file: own.File("instances.index")}}}
}

// Dir is where the index lives.
func (h *HostIndex) Dir() string { return h.dir }

// Put records or replaces an entry.
func (h *HostIndex) Put(ctx context.Context, e IndexEntry) error {
	return h.PutAll(ctx, []IndexEntry{e})
}

// PutAll records or replaces entries in one write, leaving out those
// already recorded as they are.
func (h *HostIndex) PutAll(ctx context.Context, entries []IndexEntry) error {
	return h.write(ctx, func(m map[string]IndexEntry) (map[string]IndexEntry, []string) {
		put := map[string]IndexEntry{}
		for _, e := range entries {
			if old, ok := m[e.Instance]; !ok || !sameEntry(old, e) {
				put[e.Instance] = e
			}
		}
		return put, nil
	})
}

func sameEntry(a, b IndexEntry) bool {
	return a.Sandbox == b.Sandbox && a.Driver == b.Driver && a.WorkspaceRoot == b.WorkspaceRoot &&
		a.WorkspaceID == b.WorkspaceID && a.ExpiresAt.Equal(b.ExpiresAt)
}

// Remove drops an instance's entry; a missing one is fine.
func (h *HostIndex) Remove(ctx context.Context, instance string) error {
	return h.RemoveAll(ctx, []string{instance})
}

// RemoveAll drops the entries of instances in one write; missing ones are fine.
func (h *HostIndex) RemoveAll(ctx context.Context, instances []string) error {
	return h.write(ctx, func(m map[string]IndexEntry) (map[string]IndexEntry, []string) {
		var del []string
		for _, inst := range instances {
			if _, ok := m[inst]; ok {
				del = append(del, inst)
			}
		}
		slices.Sort(del)
		return nil, del
	})
}

// Prune removes a workspace's entries for sandboxes it neither declares
// nor records (keep says which it does): a VM deleted and its record gone
// (after [lease] keep_records), the entry goes too. An ended sandbox whose
// record is kept keeps its entry, so its id still finds its workspace
// (INSTANCE_TERMINAL, list_instances' include_expired).
func (h *HostIndex) Prune(ctx context.Context, workspaceID string, keep func(sandbox string) bool) error {
	return h.write(ctx, func(m map[string]IndexEntry) (map[string]IndexEntry, []string) {
		var del []string
		for name, e := range m {
			if e.WorkspaceID == workspaceID && e.ExpiresAt.IsZero() && !keep(e.Sandbox) {
				del = append(del, name)
			}
		}
		slices.Sort(del)
		return nil, del
	})
}

// indexChange returns the entries to put and the instances to delete.
type indexChange func(map[string]IndexEntry) (map[string]IndexEntry, []string)

// write changes the index under its host-wide lock, from the file as it
// is now. It waits for the lock with ctx's values but not its cancellation:
// a run interrupted after it made or removed an instance still records it.
func (h *HostIndex) write(ctx context.Context, change indexChange) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.own.Make(); err != nil {
		return fmt.Errorf("creating host index %s: %w", h.dir, err)
	}
	lock, err := flock.Acquire(context.WithoutCancel(ctx), h.own.File("instances.lock"),
		flock.Holder{Command: "sbf (host instance index)", PID: os.Getpid()}, time.Minute)
	if err != nil {
		return fmt.Errorf("updating the host instance index: %w", err)
	}
	defer lock.Release()
	if err := h.load(); err != nil {
		return err
	}
	put, del := change(h.j.m)
	if err := h.j.change(put, del, true); err != nil {
		return fmt.Errorf("updating the host instance index: %w", err)
	}
	return nil
}

// load reads the index, making it from what an older sbf kept (one file
// per instance in instances/) when there is none yet.
func (h *HostIndex) load() error {
	defer h.counted(h.j.reads)
	if err := h.j.refresh(); err != nil || h.j.m != nil {
		return err
	}
	h.j.m = readOldIndex(h.own.Sub("instances"))
	if err := h.j.rewrite(); err != nil {
		return fmt.Errorf("writing the host instance index: %w", err)
	}
	h.own.RemoveAll("instances") // now in instances.index
	return nil
}

// readOldIndex reads the index as earlier builds kept it (a file per instance);
// unreadable entries (links among them) are skipped, as they always were.
func readOldIndex(dir ownfile.Folder) map[string]IndexEntry {
	out := map[string]IndexEntry{}
	names, err := dir.Names()
	if err != nil {
		return out
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".json") {
			continue
		}
		data, _, err := dir.ReadFile(n, 64<<10)
		var e IndexEntry
		if err == nil && json.Unmarshal(data, &e) == nil && e.Instance != "" {
			out[e.Instance] = e
		}
	}
	return out
}

// counted counts a read of the index when a refresh since before read
// bytes: an index found up to date costs a look, not a read.
func (h *HostIndex) counted(before int) {
	if h.j.reads != before {
		readcount.Add(readcount.Index)
	}
}

// All lists every entry, sorted by instance name.
func (h *HostIndex) All() ([]IndexEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.read(); err != nil {
		return nil, err
	}
	out := make([]IndexEntry, 0, len(h.j.m))
	for _, e := range h.j.m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b IndexEntry) int { return strings.Compare(a.Instance, b.Instance) })
	return out, nil
}

// read brings the index up to the file without a lock: lines are whole
// or ignored, and a rewrite replaces the file at once.
func (h *HostIndex) read() error {
	defer h.counted(h.j.reads)
	if err := h.j.refresh(); err != nil {
		return fmt.Errorf("reading host index: %w", err)
	}
	if h.j.m == nil {
		h.j.m = readOldIndex(h.own.Sub("instances"))
		h.j.seen = nil // not the file's: the next look reads it whole
	}
	return nil
}

// Lookup finds an entry by instance name or by sandbox name (MCP instance
// ids are sandbox names, unique on the host).
func (h *HostIndex) Lookup(key string) (IndexEntry, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.read() != nil {
		return IndexEntry{}, false
	}
	if e, ok := h.j.m[key]; ok {
		return e, true
	}
	var found []IndexEntry
	for _, e := range h.j.m {
		if e.Sandbox == key {
			found = append(found, e)
		}
	}
	if len(found) == 0 {
		return IndexEntry{}, false
	}
	slices.SortFunc(found, func(a, b IndexEntry) int { return strings.Compare(a.Instance, b.Instance) })
	return found[0], true
}
