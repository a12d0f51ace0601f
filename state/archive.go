package state

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/state/statefile"
)

// ArchiveName is the file that keeps the records of ended sandboxes, out
// of the state every run reads: a journal map (the mechanism of the host
// index and the ledger) of records keyed as the state journal keys them
// ("sandboxes/NAME", "tasks/ID"). status --all, list_instances'
// include_expired and the INSTANCE_TERMINAL answers read it; a run does
// not, so records kept for [lease] keep_records cost a run nothing. A
// damaged archive is read as empty and replaced by the next record moved
// there: it holds only what is reported of sandboxes that are over.
const ArchiveName = "state.archive"

// archiveMeta is what the archive's head says of its records: the oldest
// updated_at among them (zero: none, or none of known age), so a run
// learns from the head's first bytes whether any outlived keep_records.
type archiveMeta struct {
	Oldest time.Time `json:"oldest,omitzero"`
}

type archive struct {
	journalMap[json.RawMessage, archiveMeta]
}

func openArchive(own ownfile.Folder) *archive {
	return &archive{journalMap[json.RawMessage, archiveMeta]{journal: journal{file: own.File(ArchiveName)},
		limit: MaxFileBytes}}
}

// archived says whether a record leaves the state for the archive: a
// destroyed sandbox that had a VM, which no file declares any more (the
// store's run says which: Archive). A declared sandbox's record stays, so
// status says it was destroyed, as does an expired one, as the planner
// compares its lease end with the lease (a clock that reads earlier does
// not bring the lease back); a record of a sandbox never made is dropped
// by the run that rolled it back.
func (s *Store) archived(name string, sb *Sandbox) bool {
	return s.undeclared != nil && Archivable(sb) && s.undeclared(name)
}

// Archivable says whether a record may leave the state for the archive
// once no file declares its sandbox: it is destroyed and had a VM.
func Archivable(sb *Sandbox) bool {
	return sb.Phase == Destroyed && (sb.VM != nil || sb.CreatedAt != nil)
}

// Archive has the end of the store's run move the records of destroyed
// sandboxes undeclared names to the archive (without it, none moves).
func (s *Store) Archive(undeclared func(name string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.undeclared = undeclared
}

// archiveEnded moves the records archived names, and their tasks, from
// the state to the archive, the archive first: a crash between the two
// leaves a record in both, the state's, until the next whole write moves
// it again.
func (s *Store) archiveEnded() error {
	put, moved := map[string]json.RawMessage{}, map[string]bool{}
	var oldest time.Time
	for name, sb := range s.file.Sandboxes {
		if s.archived(name, sb) {
			put[statefile.SandboxKey(name)], moved[name] = encode(sb), true
			oldest = earliest(oldest, sb.UpdatedAt)
		}
	}
	if len(moved) == 0 {
		return nil
	}
	for id, t := range s.file.Tasks {
		if moved[t.Sandbox] {
			put[statefile.TaskKey(id)] = encode(t)
		}
	}
	a := openArchive(s.own)
	if err := a.load(); err != nil {
		return fmt.Errorf("archiving ended records: %w", err)
	}
	if err := a.add(put, oldest); err != nil {
		return fmt.Errorf("archiving ended records: %w", err)
	}
	for name := range moved {
		delete(s.file.Sandboxes, name)
	}
	for id, t := range s.file.Tasks {
		if moved[t.Sandbox] {
			delete(s.file.Tasks, id)
		}
	}
	return nil
}

// load reads the archive whole (a damaged one as absent), counted.
func (a *archive) load() error {
	readcount.Add(readcount.Archive)
	return a.refresh()
}

// earliest is the earlier of a and b, a zero time being none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// add records put; records older than the head says are written with a
// new head, so the head's oldest stays true.
func (a *archive) add(put map[string]json.RawMessage, oldest time.Time) error {
	if a.m != nil && (oldest.IsZero() || !a.meta.Oldest.IsZero() && !oldest.Before(a.meta.Oldest)) {
		return a.change(put, nil, true)
	}
	if a.m == nil {
		a.m = map[string]json.RawMessage{}
	}
	a.apply(put, nil)
	a.meta.Oldest = earliest(a.meta.Oldest, oldest)
	return a.rewrite()
}

// ForgetEnded drops the archived records that outlived keep at now, with
// their tasks, and returns the instances they named (their host index
// entries go with them). Unless the archive's head says one is due, it
// reads the head's first bytes only. A record of unknown age is kept.
func (s *Store) ForgetEnded(ctx context.Context, keep time.Duration, now time.Time) ([]string, error) {
	meta, err := headMeta[archiveMeta](s.own.File(ArchiveName))
	if err != nil || keep <= 0 || meta.Oldest.IsZero() || now.Sub(meta.Oldest) < keep {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	a := openArchive(s.own)
	if err := a.load(); err != nil || a.m == nil {
		return nil, err
	}
	ended := a.records()
	var del, instances []string
	gone := map[string]bool{}
	var oldest time.Time
	for name, sb := range ended.Sandboxes {
		if sb.UpdatedAt.IsZero() || now.Sub(sb.UpdatedAt) < keep {
			oldest = earliest(oldest, sb.UpdatedAt)
			continue
		}
		gone[name], instances = true, append(instances, sb.Instance)
		del = append(del, statefile.SandboxKey(name))
	}
	for id, t := range ended.Tasks {
		if gone[t.Sandbox] {
			del = append(del, statefile.TaskKey(id))
		}
	}
	a.apply(nil, del)
	a.meta.Oldest = oldest
	if err := a.rewrite(); err != nil {
		return nil, fmt.Errorf("forgetting ended records: %w", err)
	}
	return instances, nil
}

// records decodes the archive's records; an entry that does not decode
// is left out.
func (a *archive) records() *File {
	f := &File{Sandboxes: map[string]*Sandbox{}, Tasks: map[string]*Task{}}
	for key, raw := range a.m {
		kind, name, _ := strings.Cut(key, "/")
		switch kind {
		case "sandboxes":
			if sb := new(Sandbox); json.Unmarshal(raw, sb) == nil {
				f.Sandboxes[name] = sb
			}
		case "tasks":
			if t := new(Task); json.Unmarshal(raw, t) == nil {
				f.Tasks[name] = t
			}
		}
	}
	return f
}

// readArchive reads the records the archive in dir keeps (none when
// there is no archive).
func readArchive(dir string) (*File, error) {
	a := openArchive(Folder(dir))
	if err := a.load(); err != nil {
		return nil, fmt.Errorf("reading the archive of ended records: %w", err)
	}
	return a.records(), nil
}

// WithEnded is f with the records of ended sandboxes the archive in dir
// keeps, beside f's own (a sandbox f records is f's): what status --all
// shows. f itself is left as it was.
func WithEnded(dir string, f *File) (*File, error) {
	ended, err := readArchive(dir)
	if err != nil || len(ended.Sandboxes) == 0 {
		return f, err
	}
	out := *f
	out.Sandboxes, out.Tasks = maps.Clone(f.Sandboxes), maps.Clone(f.Tasks)
	if out.Tasks == nil {
		out.Tasks = map[string]*Task{}
	}
	for name, sb := range ended.Sandboxes {
		if _, live := out.Sandboxes[name]; !live {
			out.Sandboxes[name] = sb
		}
	}
	for id, t := range ended.Tasks {
		if _, live := out.Tasks[id]; !live && out.Sandboxes[t.Sandbox] == ended.Sandboxes[t.Sandbox] {
			out.Tasks[id] = t
		}
	}
	return &out, nil
}

// Ended is the archived record of a sandbox that is over (false: the
// archive keeps none): what INSTANCE_TERMINAL answers a name the state no
// longer records.
func Ended(dir, name string) (*Sandbox, bool, error) {
	ended, err := readArchive(dir)
	if err != nil {
		return nil, false, err
	}
	sb, ok := ended.Sandboxes[name]
	return sb, ok, nil
}
