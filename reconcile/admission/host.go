package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/state"
)

// Host enforces [lease] max_instances across every workspace on
// the host. Under a host-wide lock it counts the sbf instances the
// drivers list (minus those whose lease has expired, which are on their
// way out) plus slots other processes have reserved for creates in
// flight, then reserves one. A reservation is a lock file its process
// holds, so a crashed process's reservation frees itself.
type Host struct {
	Dir   string // host state folder
	Index *state.HostIndex
	Max   int
	// MaxSource names the operator's ceiling when Max is that ceiling
	// (empty: the workspace's [lease] max_instances).
	MaxSource string
	Clock     clock.Clock
	List      func(ctx context.Context) ([]drivers.Instance, error) // every sbf instance on the host
	Who       flock.Holder
	// Evict, when set, deletes one of the listed spares to make room, or
	// reports that there is none (false): a sandbox's VM that would pass
	// the cap takes a spare's place. Spares never evict each other.
	Evict func(ctx context.Context, listed []drivers.Instance, inFlight func(name string) bool) (bool, error)
	// Ledger is the host's instance ledger (nil: the one in Dir).
	Ledger     *state.Ledger
	ledgerOnce sync.Once
}

// ErrInFlight is a reservation another process holds: it is creating
// that very instance.
var ErrInFlight = errors.New("another sbf process is creating it")

// LimitError is INSTANCE_LIMIT_EXCEEDED; source names the operator's
// ceiling when the cap is that ceiling, which no workspace may raise.
func limitError(maxInstances, active int, counted []string, source string) *coded.Error {
	details := map[string]any{"max_instances": maxInstances, "active_instances": active, "instances": counted}
	fix := "destroy one or raise [lease] max_instances"
	if source != "" {
		details["max_instances_source"] = source
		fix = "destroy one; the cap is the operator's ceiling (" + source + ")"
	}
	return coded.New(coded.InstanceLimit, details,
		"instance limit reached: %d of %d sbf instances are active on this host (%s); %s",
		active, maxInstances, strings.Join(counted, ", "), fix)
}

// Admit reserves a slot for instance or returns INSTANCE_LIMIT_EXCEEDED.
// The ledger answers while it has room (it holds every instance sbf
// admitted and has not seen go, so room there is room on the host); at the
// cap the instances are counted in full, which also rewrites the ledger,
// unless a full count a moment ago already said there is no room.
func (h *Host) Admit(ctx context.Context, instance string) (func(), error) {
	resDir := reservations(h.Dir)
	if err := resDir.Make(); err != nil {
		return nil, fmt.Errorf("creating %s: %w", resDir.Path(), err)
	}
	lock, err := flock.Acquire(ctx, ownfile.At(h.Dir).File("admission.lock"), h.Who, 2*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("waiting for the host-wide instance count: %w", err)
	}
	defer lock.Release()
	ledger := h.ledger()
	if others, known, err := ledger.Others(instance); err == nil && known { // replacing one adds none
		if others < h.Max {
			if err := ledger.Add(instance); err != nil {
				return nil, err
			}
			return h.reserve(ctx, resDir, instance)
		}
		if err := h.fullNow(instance); err != nil {
			return nil, err
		}
	}
	active, err := h.count(ctx, resDir, instance)
	if err != nil {
		return nil, err
	}
	if len(active) >= h.Max {
		ledger.Reset(active, h.Clock.Now()) // a cache: the next refusal is a lookup
		return nil, limitError(h.Max, len(active), sortedSet(active), h.MaxSource)
	}
	active[instance] = true
	if err := ledger.Reset(active, h.Clock.Now()); err != nil {
		return nil, err
	}
	return h.reserve(ctx, resDir, instance)
}

// Refused says, without waiting for the host-wide lock, that instance
// would be refused now: the ledger is full and a full count a moment ago
// found no room (nil when it may be admitted, or when only a count under
// the lock can tell). A create past the cap then fails at once instead of
// queueing behind the creates in flight; Admit decides every admission.
func (h *Host) Refused(instance string) error {
	others, known, err := h.ledger().Others(instance)
	if err != nil || !known || h.Max <= 0 || others < h.Max {
		return nil
	}
	return h.fullNow(instance)
}

// Reserve is a create's admission before it waits for any lock another
// create holds: refused at once when the ledger was full a moment ago
// (Refused); else, under the host-wide lock, it adds instance to the ledger
// when the ledger (which holds every instance admitted or reserved so far)
// has room, and refuses it with INSTANCE_LIMIT_EXCEEDED when a full count
// finds none. It never deletes a spare: when one could make room, or the
// backends cannot be counted now, it decides nothing (false, nil) and the
// create's Admit decides as before. Admit still confirms every create
// under the lock, so the cap holds exactly whatever a reservation said;
// added says the ledger holds instance because of this call, which the
// run that made it takes back (Gone) unless it went on to create it. A
// reservation left by a killed process is an instance no backend lists:
// the next full count drops it.
func (h *Host) Reserve(ctx context.Context, instance string) (added bool, err error) {
	if h.Max <= 0 {
		return false, nil
	}
	if err := h.Refused(instance); err != nil { // full a moment ago: no lock is waited for
		return false, err
	}
	if err := reservations(h.Dir).Make(); err != nil {
		return false, fmt.Errorf("creating %s: %w", reservations(h.Dir).Path(), err)
	}
	lock, err := flock.Acquire(ctx, ownfile.At(h.Dir).File("admission.lock"), h.Who, 2*time.Minute)
	if err != nil {
		return false, fmt.Errorf("waiting for the host-wide instance count: %w", err)
	}
	defer lock.Release()
	ledger := h.ledger()
	others, known, err := ledger.Others(instance)
	if err != nil {
		return false, nil // Admit decides
	}
	if has, err := ledger.Has(instance); err != nil || has {
		return false, nil // counted already
	}
	if known && others < h.Max {
		return true, ledger.Add(instance)
	}
	if known {
		if err := h.fullNow(instance); err != nil {
			return false, err
		}
	}
	active, _, err := h.active(ctx, reservations(h.Dir))
	if err != nil {
		return false, nil // Admit decides
	}
	counted := active[instance]
	delete(active, instance)
	if len(active) >= h.Max {
		if h.mayEvict(instance, active) {
			return false, nil
		}
		ledger.Reset(active, h.Clock.Now()) // a cache: the next refusal is a lookup
		return false, limitError(h.Max, len(active), sortedSet(active), h.MaxSource)
	}
	active[instance] = true
	return !counted, ledger.Reset(active, h.Clock.Now())
}

// fullNow is INSTANCE_LIMIT_EXCEEDED when the ledger's other instances fill
// the cap as a full count found a moment ago, and no spare could make room
// for instance. Only then is the ledger's set copied, for the message.
func (h *Host) fullNow(instance string) error {
	counted := h.ledger().CountedAt()
	if counted.IsZero() || h.Clock.Now().Sub(counted) >= recountAfter {
		return nil
	}
	set, _, err := h.ledger().Instances()
	if err != nil {
		return nil // a count under the lock decides
	}
	delete(set, instance)
	if len(set) < h.Max || h.mayEvict(instance, set) {
		return nil
	}
	return limitError(h.Max, len(set), sortedSet(set), h.MaxSource)
}

// mayEvict says whether a full count could make room for instance by
// deleting a spare: a sandbox's VM at the cap takes a spare's place.
func (h *Host) mayEvict(instance string, counted map[string]bool) bool {
	if _, _, spare := drivers.ParsePoolName(instance); spare || h.Evict == nil {
		return false
	}
	for name := range counted {
		if _, _, spare := drivers.ParsePoolName(name); spare {
			return true
		}
	}
	return false
}

// recountAfter is how long a full count's "no room" stands: a refusal in
// a burst of creates is a lookup, yet an instance deleted behind sbf's
// back frees its place within seconds.
const recountAfter = 10 * time.Second

// ledger is the host's instance ledger, read once per process.
func (h *Host) ledger() *state.Ledger {
	h.ledgerOnce.Do(func() {
		if h.Ledger == nil {
			h.Ledger = state.OpenLedger(h.Dir)
		}
	})
	return h.Ledger
}

// Gone tells the ledger an instance was deleted, so its place is free at
// once rather than at the next full count.
func (h *Host) Gone(ctx context.Context, instance string) error {
	lock, err := flock.Acquire(ctx, ownfile.At(h.Dir).File("admission.lock"), h.Who, 2*time.Minute)
	if err != nil {
		return fmt.Errorf("waiting for the host-wide instance count: %w", err)
	}
	defer lock.Release()
	return h.ledger().Remove(instance)
}

// count is every instance that counts against the cap besides instance,
// after deleting spares to make room for a sandbox's VM.
func (h *Host) count(ctx context.Context, resDir ownfile.Folder, instance string) (map[string]bool, error) {
	active, listed, err := h.active(ctx, resDir)
	if err != nil {
		return nil, err
	}
	delete(active, instance) // replacing an instance does not add one
	_, _, spare := drivers.ParsePoolName(instance)
	for len(active) >= h.Max && !spare && h.Evict != nil {
		evicted, err := h.Evict(
			ctx,
			listed,
			func(name string) bool { return inFlight(ctx, resDir, name) },
		)
		if err != nil {
			return nil, fmt.Errorf("deleting a spare to make room for %s: %w", instance, err)
		}
		if !evicted {
			break
		}
		if active, listed, err = h.active(ctx, resDir); err != nil {
			return nil, err
		}
		delete(active, instance)
	}
	return active, nil
}

// reserve holds a reservation for instance while it is made: a full count
// by another process counts it before any backend lists it.
func (h *Host) reserve(ctx context.Context, resDir ownfile.Folder, instance string) (func(), error) {
	res, err := flock.Acquire(ctx, resDir.File(instance+".lock"), h.Who, 0)
	var locked *flock.LockedError
	if errors.As(err, &locked) {
		return nil, fmt.Errorf("reserving a slot for %s: %w (%w)", instance, ErrInFlight, err)
	}
	if err != nil {
		return nil, fmt.Errorf("reserving a slot for %s: %w", instance, err)
	}
	return func() {
		resDir.Remove(instance + ".lock")
		res.Release()
	}, nil
}

// active is every instance that counts against the cap right now, and
// what the drivers listed.
func (h *Host) active(ctx context.Context, resDir ownfile.Folder) (map[string]bool, []drivers.Instance,
	error) {
	// Reservations first: a create that ends (and drops its reservation)
	// after this look is listed by the backend below.
	active := map[string]bool{}
	names, _ := resDir.Names()
	for _, file := range names {
		name, ok := strings.CutSuffix(file, ".lock")
		if ok && inFlight(ctx, resDir, name) {
			active[name] = true
		}
	}
	listed, err := h.List(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("counting instances for the instance cap: %w", err)
	}
	expired, indexed := map[string]bool{}, map[string]bool{}
	if h.Index != nil {
		entries, err := h.Index.All()
		if err != nil {
			return nil, nil, err
		}
		now := h.Clock.Now()
		for _, e := range entries {
			indexed[e.Instance] = true
			if !e.ExpiresAt.IsZero() && !now.Before(e.ExpiresAt) {
				expired[e.Instance] = true
			}
		}
	}
	for _, inst := range listed {
		retired := inst.Label != nil && inst.Label.Owner != nil && inst.Label.Owner.Retired
		// Another person's instance on a shared backend is not this host's, unless one of
		// this host's sandboxes runs in it (a teammate's spare it adopted).
		theirs := inst.HeldByAnother && !indexed[inst.Name]
		ours := (strings.HasPrefix(inst.Name, drivers.Prefix) || inst.Label != nil) && !theirs
		if ours && !expired[inst.Name] && !retired {
			active[inst.Name] = true
		}
	}
	return active, listed, nil
}

// reservations is the state home's folder of reservation locks.
func reservations(stateDir string) ownfile.Folder { return ownfile.At(stateDir).Sub("reservations") }

// Creating reports whether a live process holds instance's reservation on
// the host whose state folder is hostDir: it is making that instance.
func Creating(ctx context.Context, hostDir, instance string) bool {
	return inFlight(ctx, reservations(hostDir), instance)
}

// inFlight reports whether instance's reservation is still held by a live
// process; a stale one is removed.
func inFlight(ctx context.Context, resDir ownfile.Folder, instance string) bool {
	l, err := flock.Acquire(ctx, resDir.File(instance+".lock"), flock.Holder{Command: "admission probe"}, 0)
	var locked *flock.LockedError
	if errors.As(err, &locked) {
		return true
	}
	if err == nil {
		resDir.Remove(instance + ".lock")
		l.Release()
	}
	return false
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
