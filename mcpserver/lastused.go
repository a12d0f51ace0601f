package mcpserver

import (
	"sync"
	"time"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// lastUse remembers when each instance last had a command or copy through
// this server (v1's last_used_at, which v1 wrote on every exec and copy).
// It is not persisted: sbf writes no state per command, so after a
// restart an instance reads as last used when its lease began.
type lastUse struct {
	mu   sync.Mutex
	seen map[string]time.Time // workspace root + "\x00" + sandbox → time
}

func (l *lastUse) touch(root, sandbox string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]time.Time{}
	}
	l.seen[root+"\x00"+sandbox] = at
}

// at is the last use, or since when nothing used it here.
func (l *lastUse) at(root, sandbox string, since *time.Time) *time.Time {
	l.mu.Lock()
	t, ok := l.seen[root+"\x00"+sandbox]
	l.mu.Unlock()
	if ok && (since == nil || t.After(*since)) {
		return &t
	}
	return since
}

// createdAt is v1's created_at: when the lease was acquired (v1 inserted
// its lease row before it created the VM, so expires_at − created_at is
// the TTL), else, once the lease is gone, when the VM was created.
func createdAt(r *spec.Resolved, rec *state.Sandbox, sandbox string) *time.Time {
	if l, ok := r.Config.Leases[sandbox]; ok && !l.AcquiredAt.IsZero() {
		t := l.AcquiredAt
		return &t
	}
	if rec != nil {
		return rec.CreatedAt
	}
	return nil
}

// created is createdAt for a result's sandbox.
func created(res *reconcile.Result, sandbox string) *time.Time {
	return createdAt(res.Resolved, res.State.Sandboxes[sandbox], sandbox)
}
