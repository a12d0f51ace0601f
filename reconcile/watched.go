package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
)

// leasePoll is how often a loop over leased workspaces looks for a lease
// another process took, renewed or dropped.
const leasePoll = 2 * time.Second

// Watched are the workspaces a loop with options o passes over now: the
// door's, and with o.Leased every workspace the host index holds a lease
// for, each once, by root.
func (e *Engine) Watched(o WatchOptions) []spec.Options {
	var out []spec.Options
	seen := map[string]bool{}
	if o.Workspaces != nil {
		for _, ws := range o.Workspaces() {
			if !seen[ws.Root] {
				seen[ws.Root] = true
				out = append(out, ws)
			}
		}
	}
	if o.Leased != nil {
		for _, root := range e.LeasedWorkspaces() {
			if ws, ok := o.Leased(root); ok && !seen[root] && !seen[ws.Root] {
				seen[root], seen[ws.Root] = true, true
				out = append(out, ws)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b spec.Options) int { return strings.Compare(a.Root, b.Root) })
	return out
}

// wakeOnLeases wakes the loop (woken) when a lease in the host index is
// taken, renewed or dropped, and whenever the door wakes it, until ctx
// ends. It polls: the index is a file every OS reads alike, and a poll
// that finds it unchanged reads nothing.
func (e *Engine) wakeOnLeases(ctx context.Context, door <-chan struct{}, woken chan<- struct{}, every time.Duration) {
	wake := func() {
		select {
		case woken <- struct{}{}:
		default:
		}
	}
	last := e.leaseFingerprint()
	t := clock.Real{}.NewTicker(every) // files change in real time, whatever SBF_NOW says
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-door:
			wake()
		case <-t.C():
			if fp := e.leaseFingerprint(); fp != last {
				last = fp
				wake()
			}
		}
	}
}

// leaseFingerprint changes when any lease does, and not when a pass
// rewrites the index as it was.
func (e *Engine) leaseFingerprint() string {
	if e.HostDir == "" {
		return ""
	}
	entries, _ := e.index().All()
	var b strings.Builder
	for _, en := range entries {
		fmt.Fprintf(&b, "%s\x00%s\x00%s\n", en.Instance, en.WorkspaceRoot, en.ExpiresAt.UTC().Format(time.RFC3339Nano))
	}
	return b.String()
}
