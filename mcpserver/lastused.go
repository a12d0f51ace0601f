package mcpserver

import (
	"sync"
	"time"

	"github.com/sandboxforge/sbf/reconcile"
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

// created is v1's created_at of a result's sandbox: when the lease was
// acquired (v1 inserted its lease row before it created the VM, so
// expires_at − created_at is the TTL), else, once the lease is gone, when
// the VM was created.
func created(res *reconcile.Result, sandbox string) *time.Time {
	if l, ok := res.Resolved.Config.Leases[sandbox]; ok && !l.AcquiredAt.IsZero() {
		t := l.AcquiredAt
		return &t
	}
	rec, _ := res.Recorded(sandbox)
	return rec.CreatedAt
}
