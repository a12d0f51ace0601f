package streamhttp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// sessionTable is the Streamable HTTP transport's session id manager
// (mcp-go's SessionIdManager). mcp-go keeps state for every session it
// ever initialised until told the session ended; this table decides when:
// after idle time, or when the cap is reached (the longest idle goes
// first). end releases what mcp-go holds for a session.
type sessionTable struct {
	idle time.Duration
	max  int
	now  func() time.Time
	end  func(id string)

	mu   sync.Mutex
	last map[string]time.Time // session → last request
}

var errUnknownSession = errors.New("unknown or expired session")

func newSessionTable(max int, idle time.Duration, now func() time.Time) *sessionTable {
	return &sessionTable{idle: idle, max: max, now: now, end: func(string) {}, last: map[string]time.Time{}}
}

// Generate starts a session for an initialize request.
func (t *sessionTable) Generate() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	id := "mcp-session-" + hex.EncodeToString(b[:])
	t.mu.Lock()
	ended := t.expiredLocked()
	for len(t.last) >= t.max && t.max > 0 {
		ended = append(ended, t.evictLocked())
	}
	t.last[id] = t.now()
	t.mu.Unlock()
	t.release(ended)
	return id
}

// Validate accepts a live session and records the request as activity.
// Requests without a session id are served statelessly, as before.
func (t *sessionTable) Validate(id string) (isTerminated bool, err error) {
	if id == "" {
		return false, nil
	}
	t.mu.Lock()
	last, ok := t.last[id]
	now := t.now()
	if ok && t.idle > 0 && now.Sub(last) >= t.idle {
		delete(t.last, id)
		t.mu.Unlock()
		t.release([]string{id})
		return false, errUnknownSession
	}
	if ok {
		t.last[id] = now
	}
	t.mu.Unlock()
	if !ok {
		return false, errUnknownSession
	}
	return false, nil
}

// Terminate forgets a session (a client's DELETE, or our own end).
func (t *sessionTable) Terminate(id string) (isNotAllowed bool, err error) {
	t.mu.Lock()
	delete(t.last, id)
	t.mu.Unlock()
	return false, nil
}

// Sweep ends every session idle for longer than the idle time and says
// how many it ended.
func (t *sessionTable) Sweep() int {
	t.mu.Lock()
	ended := t.expiredLocked()
	t.mu.Unlock()
	t.release(ended)
	return len(ended)
}

// Len is the number of live sessions.
func (t *sessionTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.last)
}

func (t *sessionTable) expiredLocked() []string {
	if t.idle <= 0 {
		return nil
	}
	var out []string
	now := t.now()
	for id, last := range t.last {
		if now.Sub(last) >= t.idle {
			delete(t.last, id)
			out = append(out, id)
		}
	}
	return out
}

// evictLocked removes the longest idle session. A scan is enough: the
// table never holds more than max entries.
func (t *sessionTable) evictLocked() string {
	var oldest string
	var at time.Time
	for id, last := range t.last {
		if oldest == "" || last.Before(at) {
			oldest, at = id, last
		}
	}
	delete(t.last, oldest)
	return oldest
}

// release runs outside the lock: ending a session goes back through
// mcp-go, which calls Terminate.
func (t *sessionTable) release(ids []string) {
	for _, id := range ids {
		t.end(id)
	}
}
