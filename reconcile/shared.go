package reconcile

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// sharedFor is how long a desired state the data plane read is reused at
// most, even with every file unchanged: leases are clamped against "now"
// when they are read.
const sharedFor = 30 * time.Second

// shared remembers, per workspace, the desired state and the state file a
// command in a sandbox last read, so that a call's cost does not grow with
// the workspace: both are reused while the files they came from are as
// they were (path, size, time and identity, each looked at with one stat).
// What it hands out is shared: read it, never change it.
type shared struct {
	mu     sync.Mutex
	loads  map[string]sharedLoad
	states map[string]sharedState
}

type sharedLoad struct {
	files string // what the files were when read
	at    time.Time
	r     *spec.Resolved
}

type sharedState struct {
	files string
	f     *state.File
}

// LoadShared is Load for readers of the desired state that change
// nothing (the data plane, the history's redaction): what it returns may be
// shared with other callers, so it must not be changed.
func (e *Engine) LoadShared(ws spec.Options) (*spec.Resolved, error) {
	if ws.Managed != nil {
		return e.Load(ws)
	}
	key := strings.Join([]string{ws.Root, ws.ConfigHome, ws.Host.OS, ws.Host.Arch, ws.Request.Key()}, "\x00")
	files := statFiles(spec.ConfigFiles(ws.Root, ws.ConfigHome))
	now := e.Clock.Now()
	e.shared.mu.Lock()
	hit, ok := e.shared.loads[key]
	e.shared.mu.Unlock()
	if ok && hit.files == files && now.Sub(hit.at) < sharedFor && !now.Before(hit.at) {
		return hit.r, nil
	}
	r, err := e.Load(ws)
	if err != nil {
		return nil, err
	}
	e.shared.mu.Lock()
	defer e.shared.mu.Unlock()
	if e.shared.loads == nil {
		e.shared.loads = map[string]sharedLoad{}
	}
	e.shared.loads[key] = sharedLoad{files: files, at: now, r: r}
	return r, nil
}

// readShared is state.Read for readers that change nothing, reused while
// state.json and its journal are as they were.
func (e *Engine) readShared(r *spec.Resolved) (*state.File, error) {
	dir := filepath.Join(r.Root, spec.Dir)
	files := statFiles([]string{filepath.Join(dir, state.FileName), filepath.Join(dir, state.JournalName)})
	e.shared.mu.Lock()
	hit, ok := e.shared.states[dir]
	e.shared.mu.Unlock()
	if ok && hit.files == files {
		return hit.f, nil
	}
	f, err := state.Read(dir, r.Root, r.WorkspaceID)
	if err != nil {
		return nil, err
	}
	e.shared.mu.Lock()
	defer e.shared.mu.Unlock()
	if e.shared.states == nil {
		e.shared.states = map[string]sharedState{}
	}
	e.shared.states[dir] = sharedState{files: files, f: f}
	return f, nil
}

// statFiles says what the files are now: a file replaced (renamed into
// place), grown or touched reads differently.
func statFiles(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(&b, "%s:-;", p)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d:%s;", p, info.Size(), info.ModTime().UnixNano(), fileID(info))
	}
	return b.String()
}

// LeasedWorkspaces are the workspace roots the host index holds a live
// lease for, sorted: what a loop watches so that leases taken before it
// started still end. A root whose folder is gone is left out (there is
// nothing left to read its leases from); one without a spec file is not,
// since create_instance leases sandboxes in folders that have none.
func (e *Engine) LeasedWorkspaces() []string {
	if e.HostDir == "" {
		return nil
	}
	entries, _ := e.index().All()
	roots := map[string]bool{}
	for _, en := range entries {
		if en.ExpiresAt.IsZero() || roots[en.WorkspaceRoot] {
			continue
		}
		if info, err := os.Stat(en.WorkspaceRoot); err == nil && info.IsDir() {
			roots[en.WorkspaceRoot] = true
		}
	}
	return slices.Sorted(maps.Keys(roots))
}
