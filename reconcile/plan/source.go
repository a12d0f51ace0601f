package plan

import (
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Source is what a create copies a VM's disk from: the instance of
// another sandbox of the workspace, as it is now or as one of its
// snapshots was.
type Source struct {
	Sandbox  string `json:"sandbox"`
	Instance string `json:"instance"`
	Snapshot string `json:"snapshot,omitempty"`
	// Spec is the source's VM as it runs (a backend that copies only a
	// stopped disk starts it again with it).
	Spec drivers.Spec `json:"spec"`
}

// String names the source in plan causes.
func (s *Source) String() string {
	if s.Snapshot != "" {
		return "from snapshot " + s.Sandbox + "/" + s.Snapshot
	}
	return "clone of sandbox " + s.Sandbox
}

// resolveSources finds, for each sandbox made from another's disk, the
// instance and snapshot it is made from; the desired state is copied,
// not changed (copied when a sandbox has a source: most plans have none).
func resolveSources(d Desired, rec *state.File, obs Observed) Desired {
	out, copied := d, false
	for name, ds := range d.Sandboxes {
		if ds.CloneOf == "" && ds.FromSnapshot == "" {
			continue
		}
		if !copied {
			out.Sandboxes, copied = maps.Clone(d.Sandboxes), true
		}
		ds.Source, ds.SourceErr = resolveSource(d, rec, obs, ds)
		out.Sandboxes[name] = ds
	}
	return out
}

func resolveSource(d Desired, rec *state.File, obs Observed, ds DesiredSandbox) (*Source, error) {
	src, snapshot := ds.CloneOf, ""
	if ds.FromSnapshot != "" {
		var err error
		if src, snapshot, err = findSnapshot(rec, ds); err != nil {
			return nil, err
		}
	}
	r := rec.Sandboxes[src]
	if r == nil || r.Phase.Terminal() || r.Instance == "" {
		return nil, coded.New(coded.InstanceNotFound, map[string]any{"sandbox": ds.Name, "source": src},
			"sandbox %s is made from sandbox %s, which has no VM to copy; destroy %s, or bring %s back first",
			ds.Name, src, ds.Name, src)
	}
	if _, ok := obs.Instances[r.Instance]; !ok {
		return nil, coded.New(coded.InstanceNotFound, map[string]any{"sandbox": ds.Name, "source": src},
			"sandbox %s is made from sandbox %s, whose VM %s is missing from %s", ds.Name, src, r.Instance, r.Driver)
	}
	if snapshot != "" {
		if s := rec.FindSnapshot(src, snapshot); s == nil || s.Instance != r.Instance {
			return nil, coded.New(coded.SnapshotNotFound, map[string]any{"sandbox": ds.Name, "source": src,
				"name": snapshot}, "snapshot %s/%s was taken of a VM sandbox %s no longer has", src, snapshot, src)
		}
	}
	if r.Driver != ds.Driver {
		return nil, coded.New(coded.ConfigInvalid, map[string]any{"sandbox": ds.Name, "source": src},
			"sandbox %s would run on %s, but a copy of sandbox %s's disk runs on its driver, %s", ds.Name,
			ds.Driver, src, r.Driver)
	}
	s := &Source{Sandbox: src, Instance: r.Instance, Snapshot: snapshot}
	if sd, ok := d.Sandboxes[src]; ok {
		s.Spec = sd.VM
	} else if r.VM != nil {
		s.Spec = state.SpecOf(r.VM)
	}
	s.Spec.Name = r.Instance
	return s, nil
}

// SourceOf is the sandbox whose disk a sandbox's VM is made from ("":
// none, or none known): clone_of, or the sandbox from_snapshot names (a bare
// name: the one other sandbox with such a snapshot). The sandbox locks
// take it before the plan exists, so it names no error: the plan does.
func SourceOf(r *spec.Resolved, rec *state.File, name string) string {
	sb := r.Config.Sandboxes[name]
	if sb.FromSnapshot == "" {
		return sb.CloneOf
	}
	if from, _, _ := spec.ParseSnapshotRef(sb.FromSnapshot); from != "" || rec == nil {
		return from
	}
	from, _, _ := findSnapshot(rec, DesiredSandbox{Name: name, FromSnapshot: sb.FromSnapshot})
	return from
}

// findSnapshot is the recorded snapshot a from_snapshot value names: a
// bare name must be one sandbox's (not this one's).
func findSnapshot(rec *state.File, ds DesiredSandbox) (sandbox, name string, err error) {
	sandbox, name, _ = spec.ParseSnapshotRef(ds.FromSnapshot)
	details := map[string]any{"sandbox": ds.Name, "from_snapshot": ds.FromSnapshot}
	if sandbox != "" {
		if rec.FindSnapshot(sandbox, name) == nil {
			return "", "", coded.New(coded.SnapshotNotFound, details,
				"from_snapshot %q: sandbox %s has no snapshot %s (sbf snapshot list %s)", ds.FromSnapshot, sandbox,
				name, sandbox)
		}
		return sandbox, name, nil
	}
	var owners []string
	for _, s := range rec.Snapshots {
		if s.Name == name && s.Sandbox != ds.Name {
			owners = append(owners, s.Sandbox)
		}
	}
	switch len(owners) {
	case 1:
		return owners[0], name, nil
	case 0:
		return "", "", coded.New(coded.SnapshotNotFound, details,
			"from_snapshot %q: no sandbox of the workspace has a snapshot of that name", ds.FromSnapshot)
	}
	slices.Sort(owners)
	details["sandboxes"] = owners
	return "", "", coded.New(coded.ConfigInvalid, details,
		"from_snapshot %q: sandboxes %v each have a snapshot of that name; write SANDBOX/%s", ds.FromSnapshot,
		owners, name)
}
