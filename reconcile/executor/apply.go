package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/state"
)

// Driver is what the executor needs from a backend: the lifecycle every
// registered backend provides.
type Driver = drivers.Driver

// Recorder persists state changes; state.Store is one. Writes need not be
// durable until Sync, which the executor calls at the end of each step.
type Recorder interface {
	Write(change func(*state.Tx)) error
	Sync() error
	Snapshot() *state.File
	Sandbox(name string) (*state.Sandbox, bool)
	TasksOf(sandbox string) []*state.Task
}

// Admitter guards the host-wide instance cap: it reserves a slot for an
// instance about to be created, or refuses.
type Admitter interface {
	Admit(ctx context.Context, instance string) (release func(), err error)
}

// Event reports progress of one action: its start, its end (Done), and
// in between what the driver says it waits for (Message); or a lease end
// the run recorded (Lease, Done, no Kind). Every event of one Apply
// carries its Run, numbered across the process so a listener hearing
// several runs tells them apart, and the count of its plan's actions
// (Steps); an action's events carry its place among them (Step, from 1).
// Workspace is the root of the workspace the run converges, set by the
// engine that runs it.
type Event struct {
	Sandbox     string
	Kind        plan.Kind
	Done        bool
	Err         error
	Elapsed     time.Duration
	Message     string
	Lease       *plan.LeaseRenewal
	Run         uint64
	Step, Steps int
	Workspace   string
}

// runs numbers the Applies of this process (Event.Run).
var runs atomic.Uint64

// Executor carries out a plan. It makes no decisions: every step it takes
// is named by the plan; it only orders them, records each outcome in the
// state as it happens, and reports every failure.
type Executor struct {
	Drivers     func(name string) (Driver, error)
	Record      Recorder
	Clock       clock.Clock
	Admit       Admitter // nil: no cap
	Parallelism int
	Events      func(Event) // nil: silent; called by one goroutine at a time
	// Layers holds, by sandbox, the in-guest layers the plan was made for.
	Layers map[string]*plan.Layers
	// NoWait starts services without waiting for them to answer.
	NoWait bool
	// WorkspaceID names the owner an adopt writes on the spare it claims.
	WorkspaceID string
	// HostDir holds the host-wide pool lock that claims of spares take
	// ("": none; the claim itself is still atomic). Who names the holder.
	HostDir string
	Who     flock.Holder

	emitMu  sync.Mutex
	adopted sync.Map       // sandbox → the instance its adopt ended with
	warming sync.WaitGroup // adopts' connections made ahead (Warmed)
	outcome Outcome
	// runID and steps are what every event of the current Apply carries.
	runID uint64
	steps int
}

// Apply executes p. Sandboxes are independent and run in parallel (up to
// Parallelism); a failed sandbox does not stop the others, while within a
// sandbox each step waits for the one before. The error joins every
// failure, each naming its sandbox; Outcome says which action did what.
func (e *Executor) Apply(ctx context.Context, p *plan.Plan) error {
	steps := make([]step, len(p.Actions))
	e.outcome = Outcome{NotAttempted: p.Actions} // until the lease ends are recorded
	e.runID, e.steps = runs.Add(1), len(p.Actions)
	leases, err := e.recordCorrections(p)
	if err != nil {
		return err
	}
	chains := chainsOf(p.Actions)
	sem := make(chan struct{}, max(1, e.Parallelism))
	var wg sync.WaitGroup
	errs := make([]error, len(chains))
	for i, chain := range chains {
		wg.Add(1)
		go func() {
			defer wg.Done()
			current := chain[0]
			defer func() {
				// A panicking action fails its sandbox, not the process (a
				// loop pass recovers only its own goroutine).
				if v := recover(); v != nil {
					a := p.Actions[current]
					errs[i] = fmt.Errorf("sandbox %s: %s panicked: %v\n%s", a.Sandbox, a.Kind, v, debug.Stack())
					steps[current].err = errs[i]
				}
			}()
			select {
			case sem <- struct{}{}:
			case <-stopChan(ctx):
				errs[i] = fmt.Errorf("sandbox %s: %w", p.Actions[current].Sandbox, ErrInterrupted)
				return
			case <-ctx.Done():
				errs[i] = fmt.Errorf("sandbox %s: %w", p.Actions[current].Sandbox, ctx.Err())
				return
			}
			defer func() { <-sem }()
			// A sandbox's steps depend on each other (VM, runtime,
			// services, env, compose): the first failure ends its chain.
			for _, k := range chain {
				if stopped(ctx) {
					errs[i] = fmt.Errorf("sandbox %s: %w", p.Actions[k].Sandbox, ErrInterrupted)
					return
				}
				a := p.Actions[k]
				if inst, ok := e.adopted.Load(a.Sandbox); ok && a.Sandbox != "" && a.Kind != plan.Adopt {
					a.Instance = inst.(string) // the steps after an adopt go to what it took
				}
				current, steps[k].ran = k, true
				errs[i] = e.run(ctx, a, k+1)
				steps[k].err = errs[i]
				if errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	e.outcome = outcomeOf(p, steps, leases)
	return errors.Join(errs...)
}

// recordCorrections records the plan's record corrections and lease ends
// in one write and returns the lease ends it recorded. A renewal alone
// (plan.RenewalsAlone: the run holds no lock of its sandbox) is a
// compare-and-set under the state's lock: recorded only while the record
// still holds the end the plan renewed, so a run that destroyed, stopped
// or renewed the sandbox since keeps what it recorded.
func (e *Executor) recordCorrections(p *plan.Plan) ([]plan.LeaseRenewal, error) {
	if len(p.Refresh) == 0 && len(p.Leases) == 0 {
		return nil, nil
	}
	alone := p.RenewalsAlone()
	var recorded []plan.LeaseRenewal
	if err := e.Record.Write(func(tx *state.Tx) {
		recorded = recorded[:0]
		for _, r := range p.Refresh {
			e.applyRefresh(tx, r)
		}
		for _, l := range p.Leases {
			if alone[l.Sandbox] && !l.AsPlanned(tx.State().Sandboxes[l.Sandbox]) {
				continue
			}
			end := l.New
			tx.Sandbox(l.Sandbox).ExpiresAt = &end
			recorded = append(recorded, l)
		}
	}); err != nil {
		return nil, fmt.Errorf("recording state corrections and lease ends: %w", err)
	}
	for _, l := range recorded {
		e.emit(Event{Sandbox: l.Sandbox, Lease: &l, Done: true})
	}
	return recorded, nil
}

// Outcome says what the last Apply did, action by action.
func (e *Executor) Outcome() Outcome { return e.outcome }

// chainsOf groups a plan's actions by sandbox, keeping their order; each
// spare's action is a chain of its own. A sandbox made from another's
// disk joins the end of that sandbox's chain, so its copy is taken after
// the source's steps, never while they change the source. A chain holds
// indexes of actions.
func chainsOf(actions []plan.Action) [][]int {
	joins := map[string]string{}
	for _, a := range actions {
		if a.Source != nil && a.Sandbox != "" {
			joins[a.Sandbox] = a.Source.Sandbox
		}
	}
	var chains [][]int
	index := map[string]int{}
	add := func(key string, k int) {
		i, ok := index[key]
		if !ok {
			i = len(chains)
			index[key] = i
			chains = append(chains, nil)
		}
		chains[i] = append(chains[i], k)
	}
	for k, a := range actions {
		if a.Sandbox == "" {
			add("\x00"+a.Instance, k)
		} else if _, joined := joins[a.Sandbox]; !joined {
			add(a.Sandbox, k)
		}
	}
	for k, a := range actions {
		if _, joined := joins[a.Sandbox]; joined && a.Sandbox != "" {
			key := a.Sandbox
			for n := 0; joins[key] != "" && n < len(joins); n++ {
				key = joins[key] // a copy of a copy joins the first source's chain
			}
			add(key, k)
		}
	}
	return chains
}

func (e *Executor) applyRefresh(tx *state.Tx, r plan.Refresh) {
	rec := tx.Sandbox(r.Sandbox)
	rec.Phase, rec.Instance, rec.Driver, rec.LastError = r.Phase, r.Instance, r.Driver, ""
	if r.Phase.Terminal() {
		dropSnapshots(tx, r.Sandbox) // no VM, no snapshots
	}
	if r.VM != nil {
		rec.VM = state.RecordOf(*r.VM)
	}
	if r.Docker != "" {
		setApplied(rec, "docker_command", r.Docker)
		guestOf(rec).DockerCommand = r.Docker
	}
	rec.UpdatedAt = e.Clock.Now().UTC()
}

// dropSnapshots forgets a sandbox's snapshot records, if it has any.
func dropSnapshots(tx *state.Tx, sandbox string) {
	if len(tx.State().SnapshotsOf(sandbox)) > 0 {
		tx.Snapshots(func(f *state.File) { f.DropSnapshotsOf(sandbox, "") })
	}
}

// note records a change to one sandbox's record.
func (e *Executor) note(a plan.Action, change func(*state.Sandbox)) error {
	return e.noteTx(a, func(_ *state.Tx, rec *state.Sandbox) { change(rec) })
}

// noteTx is note for a change that reaches beyond the record (the
// sandbox's snapshot records).
func (e *Executor) noteTx(a plan.Action, change func(*state.Tx, *state.Sandbox)) error {
	return e.Record.Write(func(tx *state.Tx) {
		rec := tx.Sandbox(a.Sandbox)
		rec.Instance, rec.Driver = a.Instance, a.Driver
		change(tx, rec)
		rec.UpdatedAt = e.Clock.Now().UTC()
	})
}

func (e *Executor) emit(ev Event) {
	ev.Run, ev.Steps = e.runID, e.steps
	if e.Events != nil {
		e.emitMu.Lock()
		defer e.emitMu.Unlock()
		e.Events(ev)
	}
}
