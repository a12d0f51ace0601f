package statefile

import (
	"slices"
	"strings"
)

// SnapshotsOf lists a sandbox's snapshot records, sorted by name.
func (f *File) SnapshotsOf(sandbox string) []*Snapshot {
	var out []*Snapshot
	for _, s := range f.Snapshots {
		if s.Sandbox == sandbox {
			out = append(out, s)
		}
	}
	return out
}

// FindSnapshot is a sandbox's snapshot record by name (nil when none).
func (f *File) FindSnapshot(sandbox, name string) *Snapshot {
	for _, s := range f.Snapshots {
		if s.Sandbox == sandbox && s.Name == name {
			return s
		}
	}
	return nil
}

// PutSnapshot records a snapshot, replacing a record of the same sandbox
// and name, and keeps the records sorted.
func (f *File) PutSnapshot(s *Snapshot) {
	f.DropSnapshot(s.Sandbox, s.Name)
	f.Snapshots = append(f.Snapshots, s)
	slices.SortFunc(f.Snapshots, func(a, b *Snapshot) int {
		if c := strings.Compare(a.Sandbox, b.Sandbox); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// DropSnapshot forgets one snapshot record.
func (f *File) DropSnapshot(sandbox, name string) {
	f.Snapshots = slices.DeleteFunc(f.Snapshots, func(s *Snapshot) bool {
		return s.Sandbox == sandbox && s.Name == name
	})
	if len(f.Snapshots) == 0 {
		f.Snapshots = nil
	}
}

// DropSnapshotsOf forgets the snapshot records of a sandbox whose
// instance went (instance "": whichever instance they were of).
func (f *File) DropSnapshotsOf(sandbox, instance string) {
	f.Snapshots = slices.DeleteFunc(f.Snapshots, func(s *Snapshot) bool {
		return s.Sandbox == sandbox && (instance == "" || s.Instance == instance)
	})
	if len(f.Snapshots) == 0 {
		f.Snapshots = nil
	}
}
