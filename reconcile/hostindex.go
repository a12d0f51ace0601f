package reconcile

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// The host index: which leased sandboxes this host holds, written beside
// each edit of the desired state and pruned of what a run forgot.

func (e *Engine) indexLeases(ctx context.Context, r *spec.Resolved, rec *state.File) error {
	if e.HostDir == "" {
		return nil
	}
	idx := e.index()
	names := map[string]bool{}
	for n := range r.Config.Sandboxes {
		names[n] = true
	}
	for n := range rec.Sandboxes {
		names[n] = true
	}
	entries := make([]state.IndexEntry, 0, len(names))
	for name := range names {
		entry := state.IndexEntry{Instance: drivers.InstanceName(r.WorkspaceID, name), Sandbox: name,
			WorkspaceRoot: r.Root, WorkspaceID: r.WorkspaceID}
		if sb := rec.Sandboxes[name]; sb != nil && sb.Instance != "" && sb.Instance != entry.Instance {
			// An adopted instance keeps its own name; the index follows it.
			if err := idx.Remove(ctx, entry.Instance); err != nil {
				return fmt.Errorf("updating the host instance index: %w", err)
			}
			entry.Instance = sb.Instance
		}
		if sb, ok := r.Config.Sandboxes[name]; ok {
			entry.Driver = r.Host.ResolveDriver(sb.Driver)
		} else {
			entry.Driver = rec.Sandboxes[name].Driver
		}
		if l, ok := r.Config.Leases[name]; ok {
			entry.ExpiresAt = l.ExpiresAt
		}
		entries = append(entries, entry)
	}
	if err := idx.PutAll(ctx, entries); err != nil {
		return fmt.Errorf("updating the host instance index: %w", err)
	}
	return nil
}

// index is the host's instance index, read incrementally for the life of
// the engine.
func (e *Engine) index() *state.HostIndex {
	e.indexOnce.Do(func() {
		e.hostIndex = state.OpenHostIndex(e.HostDir)
		e.ledger = state.OpenLedger(filepath.Join(e.HostDir, "admission"))
	})
	return e.hostIndex
}

// pruneIndex drops the host index entries of the sandboxes a run forgot
// that are neither declared nor recorded any more. Only those: an ended
// sandbox's record kept in the archive keeps its entry too, and a run
// reads no archive.
func (e *Engine) pruneIndex(ctx context.Context, r *spec.Resolved, rec *state.File, forgot []string) error {
	if e.HostDir == "" || len(forgot) == 0 {
		return nil
	}
	err := e.index().Prune(ctx, r.WorkspaceID, func(name string) bool {
		_, declared := r.Config.Sandboxes[name]
		_, recorded := rec.Sandboxes[name]
		return declared || recorded || !slices.Contains(forgot, name)
	})
	if err != nil {
		return fmt.Errorf("updating the host instance index: %w", err)
	}
	return nil
}
