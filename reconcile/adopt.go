package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
)

// AdoptRequest asks to take an existing backend instance, made outside
// sbf's pools (a SandboxForge v1 VM), as the VM of an ad-hoc sandbox.
type AdoptRequest struct {
	// Sandbox is the ad-hoc sandbox to declare (a valid sandbox name no
	// file of the workspace declares), e.g. v1's instance id.
	Sandbox string
	// Instance is the backend's name for the VM, kept as it is.
	Instance string
	// Driver runs it ("": the workspace's [vm] driver).
	Driver string
	// ExpiresAt ends the lease; AcquiredAt (zero: now) is where
	// max_lifetime counts from. Both are bounded at load as any lease.
	ExpiresAt  time.Time
	AcquiredAt time.Time
	// Keys are [vm] keys the sandbox is declared with, as `sbf up` takes
	// them (cpus as int64, memory_gib as float64, runtime as bool …):
	// say what the VM has, or the next plan changes the VM to match.
	Keys map[string]any
}

// AdoptInstance declares req.Sandbox as an ad-hoc sandbox whose VM is
// the existing instance req.Instance, leased until req.ExpiresAt, and
// converges it: the instance's ownership label is claimed (refused when
// another sandbox owns it; a missing instance is INSTANCE_NOT_FOUND in the
// sandbox's error), it is recorded in the state file, started when
// stopped, and the sandbox's layers run as for any VM. The declaration
// and lease are written first (an `adopt` key in the managed overrides),
// so a crash before the claim repeats the import on the next run and a
// crash after it finds the instance by its label. Rerunning it is safe. A
// failed import is not rolled back: the VM is never deleted for it.
// From then on the sandbox is like any other: its lease expires and the
// VM is deleted, `sbf destroy` and destroy_instance delete it.
func (e *Engine) AdoptInstance(ctx context.Context, ws spec.Options, req AdoptRequest) (*Result, error) {
	now := e.Clock.Now()
	switch {
	case !spec.ValidSandboxName(req.Sandbox):
		return nil, coded.New(
			coded.ConfigInvalid,
			map[string]any{"sandbox": req.Sandbox},
			"%q is not a valid sandbox name (letters, digits, '-' and '_', starting and ending with a letter or digit)",
			req.Sandbox,
		)
	case req.Instance == "":
		return nil, coded.New(coded.InvalidArguments, map[string]any{"field": "instance"}, "no instance to adopt")
	case !now.Before(req.ExpiresAt):
		return nil, coded.New(
			coded.TTLInvalid,
			map[string]any{"expires_at": req.ExpiresAt.UTC().Format(time.RFC3339)},
			"the lease of %s ended at %s; an expired lease is not adopted",
			req.Sandbox,
			req.ExpiresAt.UTC().Format(time.RFC3339),
		)
	}
	keys := maps.Clone(req.Keys)
	if keys == nil {
		keys = map[string]any{}
	}
	keys["adopt"] = req.Instance
	if req.Driver != "" {
		keys["driver"] = req.Driver
	}
	acquired := req.AcquiredAt
	if acquired.IsZero() {
		acquired = now
	}
	edit := func(m *spec.Managed, c EditContext) error {
		r := c.Resolved
		if _, declared := r.Config.Sandboxes[req.Sandbox]; declared && !r.AdHoc[req.Sandbox] {
			return coded.New(coded.ConfigInvalid, map[string]any{"sandbox": req.Sandbox},
				"sandbox %s is declared by the workspace's files; an adopted instance needs an ad-hoc sandbox", req.Sandbox)
		}
		m.Declare(req.Sandbox, keys)
		m.SetLease(
			req.Sandbox,
			spec.LeaseRecord{
				AcquiredAt: acquired.UTC().Truncate(time.Second),
				ExpiresAt:  req.ExpiresAt.UTC().Truncate(time.Second),
			},
		)
		return nil
	}
	res, err := e.Apply(ctx, ws, Options{Targets: []string{req.Sandbox},
		Intent: engineEdit{op: "adopt", targets: []string{req.Sandbox}, change: edit}})
	if err != nil {
		return res, fmt.Errorf("adopting %s as sandbox %s: %w", req.Instance, req.Sandbox, err)
	}
	return res, nil
}

// adoptSignal tells the engine's running loops that a spare was adopted,
// whichever door's run adopted it, so their pool passes refill at once.
type adoptSignal struct {
	mu   sync.Mutex
	subs []chan struct{}
}

// subscribe returns a channel that receives after adoptions (several
// coalesce into one) and the function that ends the subscription.
func (s *adoptSignal) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs = append(s.subs, ch)
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.subs = slices.DeleteFunc(s.subs, func(c chan struct{}) bool { return c == ch })
	}
}

func (s *adoptSignal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default: // one is pending already
		}
	}
}
