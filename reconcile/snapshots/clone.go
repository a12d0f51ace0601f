package snapshots

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Clone is what a clone asks for, as its checks see it.
type Clone struct {
	Source   string
	Name     string         // "": the first free SOURCE-clone-N
	Snapshot string         // "": the disk as it is now
	TTL      *time.Duration // nil: the source's lease length
}

// Leases is what the clone checks ask of the engine, which decides leases.
type Leases interface {
	// Live refuses a sandbox that holds no live lease.
	Live(r *spec.Resolved, rec *state.File, name string, now time.Time) error
	// TTLInvalid is the refusal of a lease length, saying why.
	TTLInvalid(r *spec.Resolved, ttl time.Duration, why string) error
}

// CloneChecks decide what a door does not about a clone.
type CloneChecks struct {
	Now     time.Time
	Leases  Leases
	Drivers func(name string, r *spec.Resolved) (drivers.Driver, error)
}

// Check refuses a clone unless the source holds a live lease and has a
// VM, its backend clones, the snapshot (if any) is the source's, the
// lease length is within bounds, and the new name is free; it returns
// that name.
func (c CloneChecks) Check(r *spec.Resolved, rec *state.File, req Clone) (string, error) {
	if err := c.Leases.Live(r, rec, req.Source, c.Now); err != nil {
		return "", err
	}
	src := rec.Sandboxes[req.Source]
	if src == nil || src.Phase.Terminal() || src.Instance == "" {
		return "", coded.New(coded.InstanceNotFound, map[string]any{"sandbox": req.Source},
			"sandbox %s has no VM to clone yet; run 'sbf up %s' first", req.Source, req.Source)
	}
	if req.Snapshot != "" {
		if err := drivers.CheckSnapshotName("snapshot", req.Snapshot); err != nil {
			return "", err
		}
		if s := rec.FindSnapshot(req.Source, req.Snapshot); s == nil || s.Instance != src.Instance {
			return "", coded.New(coded.SnapshotNotFound, map[string]any{"sandbox": req.Source, "name": req.Snapshot},
				"sandbox %s has no snapshot %s", req.Source, req.Snapshot)
		}
	}
	if req.TTL != nil && (*req.TTL <= 0 || *req.TTL > r.Config.Lease.MaxTTL.Std()) {
		return "", c.Leases.TTLInvalid(r, *req.TTL, "a lease lasts longer than zero and at most lease.max_ttl")
	}
	driver := r.Host.ResolveDriver(r.Config.Sandboxes[req.Source].Driver)
	drv, err := c.Drivers(driver, r)
	if err != nil {
		return "", err
	}
	if drivers.CapabilitiesOf(drv).Clone == nil {
		return "", drivers.NoSnapshots(driver)
	}
	name := req.Name
	if name == "" {
		name = freeCloneName(r, rec, req.Source)
	}
	return name, NameFree(r, rec, name)
}

// NameFree refuses a name that is no sandbox's name or is one already.
func NameFree(r *spec.Resolved, rec *state.File, name string) error {
	if !spec.ValidSandboxName(name) {
		return coded.New(coded.ConfigInvalid, map[string]any{"sandbox": coded.Clip(name)},
			"%q is not a valid sandbox name (letters, digits, '-' and '_', starting and ending with a letter or "+
				"digit, at most 40)", coded.Clip(name))
	}
	_, declared := r.Config.Sandboxes[name]
	if sb := rec.Sandboxes[name]; declared || sb != nil && !sb.Phase.Terminal() {
		return coded.New(coded.ConfigInvalid, map[string]any{"sandbox": name},
			"a sandbox named %s exists already; choose another name for the clone", name)
	}
	return nil
}

// freeCloneName is SOURCE-clone-N with the smallest N no sandbox has (a
// long source name is shortened to keep within a sandbox name's length).
func freeCloneName(r *spec.Resolved, rec *state.File, source string) string {
	for n := 1; ; n++ {
		suffix := fmt.Sprintf("-clone-%d", n)
		base := source[:min(len(source), 40-len(suffix))]
		name := strings.TrimRight(base, "-_") + suffix
		_, declared := r.Config.Sandboxes[name]
		if _, recorded := rec.Sandboxes[name]; !declared && !recorded {
			return name
		}
	}
}

// CloneKeys are the keys a clone is declared with: its source's, as the
// spec's tags name them (spec.Keys: a key added to a sandbox is cloned with
// no line here), but for its host ports (a host port is taken once), what
// sbf records of the source alone and empty values, which the clone takes
// from [vm] as its source did.
func CloneKeys(sb spec.Sandbox) map[string]any {
	keys := spec.Keys(sb)
	network := keys["network"]
	for _, k := range []string{"ports", "adopt", "clone_of", "from_snapshot", "network"} {
		delete(keys, k)
	}
	dropEmpty(keys)
	if sb.Network.Egress != "" {
		// The copy is held to its source's network policy, never a wider
		// one: an empty allow list stays, not [network]'s.
		keys["network"] = network
	}
	return keys
}

// dropEmpty removes a table's empty strings, lists and tables.
func dropEmpty(table map[string]any) {
	for k, v := range table {
		if sub, ok := v.(map[string]any); ok {
			dropEmpty(sub)
		}
		switch rv := reflect.ValueOf(v); rv.Kind() {
		case reflect.String, reflect.Slice, reflect.Map:
			if rv.Len() == 0 {
				delete(table, k)
			}
		}
	}
}
