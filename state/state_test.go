package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/readcount"
)

func open(t *testing.T, dir string, timeout time.Duration) (*Store, error) {
	t.Helper()
	return Open(context.Background(), dir, "/ws", "ws_0123456789ab",
		flock.Holder{Command: "sbf test", PID: os.Getpid(), Since: time.Unix(0, 0)}, timeout)
}

func TestUpdateWritesAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sandboxforge")
	s, err := open(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if gi, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(gi) != "*\n" {
		t.Errorf(".gitignore = %q, want *", gi)
	}
	for i, phase := range []Phase{Creating, Running} {
		if err := s.Update(func(f *File) { f.Sandboxes["api"] = &Sandbox{Phase: phase, Driver: "sim"} }); err != nil {
			t.Fatal(err)
		}
		onDisk, err := Read(dir, "/ws", "ws_0123456789ab")
		if err != nil {
			t.Fatal(err)
		}
		if onDisk.Serial != int64(i+1) || onDisk.Sandboxes["api"].Phase != phase {
			t.Errorf("after update %d: serial %d phase %s", i+1, onDisk.Serial, onDisk.Sandboxes["api"].Phase)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, BackupName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a backup of a state that did not exist before the run: %v", err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(matches) > 0 {
		t.Errorf("temporary files left behind: %v", matches)
	}
}

// TestOneBackupPerRun: the backup is the file as a run (a Store) found
// it, byte for byte, written once however many actions the run records.
func TestOneBackupPerRun(t *testing.T) {
	dir := t.TempDir()
	// As the first state file code wrote it: an empty tasks object this
	// build no longer writes, so a re-encoded backup would differ.
	found := []byte(`{"version": 1, "lineage": "5f1c0a4e", "serial": 7, "workspace_root": "/ws",` +
		` "workspace_id": "ws_0123456789ab", "sandboxes": {}, "tasks": {}}` + "\n")
	os.WriteFile(filepath.Join(dir, FileName), found, 0o644)
	s, err := open(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, phase := range []Phase{Creating, Running} {
		if err := s.Update(func(f *File) { f.Sandboxes["api"] = &Sandbox{Phase: phase} }); err != nil {
			t.Fatal(err)
		}
		if backup, _ := os.ReadFile(filepath.Join(dir, BackupName)); string(backup) != string(found) {
			t.Fatalf("after recording %s the backup is\n%s\nwant the file the run started from", phase, backup)
		}
	}
	os.Remove(filepath.Join(dir, BackupName))
	if err := s.Update(func(f *File) { f.Sandboxes["api"].Phase = Stopped }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, BackupName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the backup was written again in the same run: %v", err)
	}
	s.Close()
	endOfRun, _ := os.ReadFile(filepath.Join(dir, FileName))
	s, err = open(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Update(func(f *File) { f.Sandboxes["api"].Phase = Running }); err != nil {
		t.Fatal(err)
	}
	var prev File
	backup, _ := os.ReadFile(filepath.Join(dir, BackupName))
	if string(backup) != string(endOfRun) || json.Unmarshal(backup, &prev) != nil || prev.Serial != 10 {
		t.Errorf("the next run's backup is serial %d:\n%s\nwant the previous run's last write", prev.Serial, backup)
	}
}

func TestTheFileNamesTheSbfThatWroteIt(t *testing.T) {
	old := SbfVersion
	SbfVersion = "1.2.3"
	t.Cleanup(func() { SbfVersion = old })
	dir := t.TempDir()
	s, err := open(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Update(func(*File) {}); err != nil {
		t.Fatal(err)
	}
	onDisk, err := Read(dir, "/ws", "ws_0123456789ab")
	if err != nil || onDisk.WrittenBy != "1.2.3" || s.Snapshot().WrittenBy != "1.2.3" {
		t.Errorf("written_by %q (%v), in memory %q", onDisk.WrittenBy, err, s.Snapshot().WrittenBy)
	}
}

func TestLineageIsFixedAndNew(t *testing.T) {
	if l := New("/a", "ws_a").Lineage; l != "" {
		t.Errorf("an unwritten state has lineage %q", l)
	}
	if a, b := newLineage(), newLineage(); a == b || len(a) != 36 {
		t.Errorf("lineages %q %q: want distinct UUID-shaped values", a, b)
	}
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	s.Update(func(*File) {})
	lineage := s.Snapshot().Lineage
	s.Close()
	s, _ = open(t, dir, 0)
	defer s.Close()
	s.Update(func(*File) {})
	if got := s.Snapshot().Lineage; got != lineage {
		t.Errorf("lineage changed across writes: %s → %s", lineage, got)
	}
}

func TestLockedStateNamesItsHolder(t *testing.T) {
	defer func(w time.Duration) { minLockWait = w }(minLockWait)
	minLockWait = 50 * time.Millisecond
	dir := t.TempDir()
	if err := EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	// A process stuck while it writes the file keeps the lock.
	stuck, err := flock.Acquire(context.Background(), Folder(dir).File(LockName),
		flock.Holder{Command: "sbf test", PID: os.Getpid()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = open(t, dir, 0)
	var locked *flock.LockedError
	if !errors.As(err, &locked) || locked.Holder == nil || locked.Holder.Command != "sbf test" ||
		locked.Holder.PID != os.Getpid() {
		t.Fatalf("open while stuck: %v", err)
	}
	if !strings.Contains(err.Error(), "--lock-timeout") {
		t.Errorf("error does not say how to wait: %v", err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		stuck.Release()
	}()
	second, err := open(t, dir, 5*time.Second)
	if err != nil {
		t.Fatalf("waiting with a timeout: %v", err)
	}
	second.Close()
}

// Two runs hold the state at once (two processes, each converging its own
// sandboxes): each update applies to the file as it is, so neither loses
// the other's records, and the serial counts every write.
func TestConcurrentStoresKeepEachOthersRecords(t *testing.T) {
	dir := t.TempDir()
	a, err := open(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := open(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		s    *Store
		name string
	}{{a, "one"}, {b, "two"}, {a, "three"}} {
		if err := w.s.Update(func(f *File) { f.Sandboxes[w.name] = &Sandbox{Phase: Running} }); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Read(dir, "/ws", "ws_0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Sandboxes) != 3 || f.Serial != 3 {
		t.Errorf("after three writes by two stores: serial %d, sandboxes %v", f.Serial, f.Sandboxes)
	}
}

func TestCorruptStateIsReportedAndKept(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	garbage := []byte(`{"version": 1, "lineage": "x", "sandboxes": {"api": `)
	os.WriteFile(path, garbage, 0o644)
	_, err := open(t, dir, 0)
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) || corrupt.Path != path || !strings.Contains(err.Error(), BackupName) {
		t.Fatalf("err = %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(garbage) {
		t.Error("a corrupt state file was modified")
	}
	// The lock was released, so the user can repair and retry.
	os.Remove(path)
	s, err := open(t, dir, 0)
	if err != nil {
		t.Fatalf("after removing the corrupt file: %v", err)
	}
	s.Close()
}

// TestVersions: the format is statefile's (tested there); what the store
// adds is that a file it cannot read is reported and kept.
func TestVersions(t *testing.T) {
	dir := t.TempDir()
	future := []byte(`{"version": 99, "lineage": "x"}`)
	os.WriteFile(filepath.Join(dir, FileName), future, 0o644)
	_, err := Read(dir, "/ws", "ws_0123456789ab")
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), "newer sbf") {
		t.Errorf("future version: %v", err)
	}
	os.WriteFile(filepath.Join(dir, FileName), []byte(`{"lineage": "x"}`), 0o644)
	if _, err := open(t, dir, 0); err == nil {
		t.Error("a document without a version was accepted")
	}
	if now, _ := os.ReadFile(filepath.Join(dir, FileName)); string(now) != `{"lineage": "x"}` {
		t.Errorf("an unreadable state file was changed: %s", now)
	}
}

func TestHostIndex(t *testing.T) {
	idx := OpenHostIndex(t.TempDir())
	exp := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, e := range []IndexEntry{
		{Instance: "sbf-01234567-inst_1a2b3c4d", Sandbox: "inst_1a2b3c4d", WorkspaceRoot: "/a", ExpiresAt: exp},
		{Instance: "sbf-89abcdef-api", Sandbox: "api", WorkspaceRoot: "/b"},
	} {
		if err := idx.Put(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := idx.All()
	if err != nil || len(all) != 2 || all[0].Instance != "sbf-01234567-inst_1a2b3c4d" {
		t.Fatalf("All = %+v, %v", all, err)
	}
	if e, ok := idx.Lookup("inst_1a2b3c4d"); !ok || e.WorkspaceRoot != "/a" || !e.ExpiresAt.Equal(exp) {
		t.Errorf("Lookup by id = %+v %v", e, ok)
	}
	if _, ok := idx.Lookup("nope"); ok {
		t.Error("Lookup found an unknown instance")
	}
}

// Prune drops a workspace's entries that hold no lease and whose sandbox
// the workspace neither declares nor records; an ended entry is written
// without a zero expires_at.
func TestHostIndexPrune(t *testing.T) {
	dir := t.TempDir()
	idx := OpenHostIndex(dir)
	exp := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, e := range []IndexEntry{
		{Instance: "sbf-01234567-gone", Sandbox: "gone", WorkspaceID: "ws_a"},                     // forgotten: pruned
		{Instance: "sbf-01234567-ended", Sandbox: "ended", WorkspaceID: "ws_a"},                   // recorded: kept
		{Instance: "sbf-01234567-leased", Sandbox: "leased", WorkspaceID: "ws_a", ExpiresAt: exp}, // a lease: kept
		{Instance: "sbf-89abcdef-gone", Sandbox: "gone", WorkspaceID: "ws_b"},                     // another workspace's
	} {
		if err := idx.Put(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Prune(t.Context(), "ws_a", func(name string) bool { return name == "ended" }); err != nil {
		t.Fatal(err)
	}
	all, _ := idx.All()
	var names []string
	for _, e := range all {
		names = append(names, e.Instance)
	}
	if strings.Join(names, " ") != "sbf-01234567-ended sbf-01234567-leased sbf-89abcdef-gone" {
		t.Errorf("after Prune: %v", names)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "instances.index"))
	if strings.Contains(string(raw), `"expires_at":"0001`) {
		t.Errorf("an ended entry carries a zero lease end: %s", raw)
	}
}

// An index kept the old way (a file per instance) is read, and moved into
// instances.index by the first write.
func TestHostIndexReadsTheOldLayout(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "instances")
	os.MkdirAll(old, 0o755)
	os.WriteFile(filepath.Join(old, "sbf-01234567-api.json"),
		[]byte(`{"instance":"sbf-01234567-api","sandbox":"api","workspace_id":"ws_a"}`), 0o644)
	idx := OpenHostIndex(dir)
	if e, ok := idx.Lookup("api"); !ok || e.WorkspaceID != "ws_a" {
		t.Fatalf("the old layout's entry was not found: %+v %v", e, ok)
	}
	web := IndexEntry{Instance: "sbf-01234567-web", Sandbox: "web", WorkspaceID: "ws_a"}
	if err := idx.Put(t.Context(), web); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old layout is still there after a write: %v", err)
	}
	all, _ := OpenHostIndex(dir).All()
	if len(all) != 2 {
		t.Errorf("after moving: %+v", all)
	}
}

// Another process's writes are seen by a long-lived index's next look.
func TestHostIndexSeesOtherWriters(t *testing.T) {
	dir := t.TempDir()
	reader, writer := OpenHostIndex(dir), OpenHostIndex(dir)
	for i := range 200 { // past the point where the file is rewritten whole
		name := fmt.Sprintf("sb%03d", i)
		if err := writer.Put(t.Context(), IndexEntry{Instance: "sbf-01234567-" + name, Sandbox: name}); err != nil {
			t.Fatal(err)
		}
		if _, ok := reader.Lookup(name); !ok {
			t.Fatalf("entry %d was not seen", i)
		}
	}
	writer.Remove(t.Context(), "sbf-01234567-sb007")
	if _, ok := reader.Lookup("sb007"); ok {
		t.Error("a removed entry is still found")
	}
}

// A read of the host index is counted when it reads the file (whole, or
// the lines another process appended), not when it finds it unchanged.
func TestIndexReadsAreCountedWhenTheyRead(t *testing.T) {
	dir := t.TempDir()
	writer, reader := OpenHostIndex(dir), OpenHostIndex(dir)
	reads := func(do func()) int64 {
		before := readcount.Now()
		do()
		return readcount.Now().Since(before).Of(readcount.Index)
	}
	all := func() {
		if _, err := reader.All(); err != nil {
			t.Fatal(err)
		}
	}
	put := func(name string) {
		if err := writer.Put(t.Context(), IndexEntry{Instance: "sbf-x-" + name, Sandbox: name}); err != nil {
			t.Fatal(err)
		}
	}
	put("a")
	for _, c := range []struct {
		what string
		do   func()
		want int64
	}{{"a first look", all, 1}, {"a look at an unchanged index", all, 0},
		{"another process's put", func() { put("b") }, 0}, {"a look after it", all, 1}} {
		if n := reads(c.do); n != c.want {
			t.Errorf("%s counted %d index reads, want %d", c.what, n, c.want)
		}
	}
}

// Issue 43: a sync that renews every lease changes every entry, and the
// index used to keep each such line until it held as many lines as
// entries: 217 KB a sync at 1,000 sandboxes, unreadable (past 16 MiB)
// after 78 of them. Rewritten by size, the file stays within twice its
// live content; a sync that changes nothing writes nothing, and one
// changed entry appends one short line.
func TestHostIndexStaysBoundedBySize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "instances.index")
	idx := OpenHostIndex(dir)
	end := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	size := func() int64 {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}
	if err := idx.PutAll(t.Context(), indexEntries(1000, end)); err != nil {
		t.Fatal(err)
	}
	compacted := size()
	for i := range 40 {
		end = end.Add(time.Second)
		if err := idx.PutAll(t.Context(), indexEntries(1000, end)); err != nil {
			t.Fatal(err)
		}
		if got := size(); got > 3*compacted {
			t.Fatalf("after %d renewals the index holds %d bytes, its live content %d", i+1, got, compacted)
		}
	}
	if err := idx.PutAll(t.Context(), indexEntries(1000, end)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if err := idx.PutAll(t.Context(), indexEntries(1000, end)); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("a sync that changed nothing wrote %d bytes", len(after)-len(before))
	}
	fresh := OpenHostIndex(t.TempDir())
	fresh.PutAll(t.Context(), indexEntries(1000, end))
	before, _ = os.ReadFile(filepath.Join(fresh.Dir(), "instances.index"))
	changed := indexEntries(1000, end)
	changed[7].ExpiresAt = end.Add(time.Hour)
	if err := fresh.PutAll(t.Context(), changed); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(fresh.Dir(), "instances.index"))
	if added := after[len(before):]; string(after[:len(before)]) != string(before) ||
		strings.Count(string(added), "\n") != 1 || len(added) > 512 {
		t.Errorf("one changed entry wrote %d bytes:\n%s", len(after)-len(before), added)
	}
	if e, ok := OpenHostIndex(fresh.Dir()).Lookup("sb00007"); !ok || !e.ExpiresAt.Equal(end.Add(time.Hour)) {
		t.Errorf("the changed entry read back as %+v", e)
	}
}

// The host maps are read as earlier builds wrote them (the same format:
// the whole map, then put and delete lines); a line a crashed writer left
// unfinished is skipped, and the next write cuts it off.
func TestHostMapsReadEarlierFilesAndSkipATornLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "instances.index"), []byte(
		`{"map":1,"all":{"sbf-x-a":{"instance":"sbf-x-a","sandbox":"a","driver":"sim","workspace_root":"/w",`+
			`"workspace_id":"ws_a"}}}`+"\n"+
			`{"put":{"sbf-x-b":{"instance":"sbf-x-b","sandbox":"b","driver":"sim","workspace_root":"/w",`+
			`"workspace_id":"ws_a","expires_at":"2026-11-25T12:00:00Z"}}}`+"\n"+
			`{"delete":["sbf-x-a"]}`+"\n"+`{"put":{"sbf-x-c":{"inst`), 0o644)
	os.MkdirAll(filepath.Join(dir, "admission"), 0o755)
	os.WriteFile(filepath.Join(dir, "admission", "ledger"), []byte(
		`{"map":1,"all":{"sbf-x-a":true},"meta":{"counted_at":"2026-11-25T12:00:00Z"}}`+"\n"+
			`{"put":{"sbf-x-b":true}}`+"\n"), 0o644)
	idx := OpenHostIndex(dir)
	if all, err := idx.All(); err != nil || len(all) != 1 || all[0].Sandbox != "b" || all[0].ExpiresAt.IsZero() {
		t.Fatalf("the earlier index read as %+v, %v", all, err)
	}
	if err := idx.Put(t.Context(), IndexEntry{Instance: "sbf-x-d", Sandbox: "d"}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "instances.index")); strings.Contains(string(data), `"inst`+"{") ||
		!strings.HasSuffix(string(data), `"sandbox":"d","driver":"","workspace_root":"","workspace_id":""}}}`+"\n") {
		t.Errorf("the unfinished line was not cut off:\n%s", data)
	}
	if all, _ := OpenHostIndex(dir).All(); len(all) != 2 {
		t.Errorf("after the write: %+v", all)
	}
	ledger := OpenLedger(dir)
	set, known, err := ledger.Instances()
	if err != nil || !known || len(set) != 2 || !ledger.CountedAt().Equal(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("the earlier ledger read as %v %v %v, counted %s", set, known, err, ledger.CountedAt())
	}
}

// An index file holding no whole map (a first write that never finished)
// is made anew by the next write, as a missing one is.
func TestHostIndexWithoutAWholeHeadIsMadeAnew(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "instances.index"), []byte(`{"map":1,"all":{"sbf-x-a":{"inst`), 0o644)
	idx := OpenHostIndex(dir)
	if err := idx.Put(t.Context(), IndexEntry{Instance: "sbf-x-b", Sandbox: "b"}); err != nil {
		t.Fatal(err)
	}
	if all, err := OpenHostIndex(dir).All(); err != nil || len(all) != 1 || all[0].Sandbox != "b" {
		t.Errorf("after a write: %+v, %v", all, err)
	}
}

// The ledger counts the instances besides one without copying its set:
// an instance it holds is not counted twice when it is admitted again.
func TestTheLedgerCountsTheOthers(t *testing.T) {
	ledger := OpenLedger(t.TempDir())
	if _, known, err := ledger.Others("a"); known || err != nil {
		t.Fatalf("a ledger never counted is known: %v", err)
	}
	if err := ledger.Reset(map[string]bool{"a": true, "b": true}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for instance, want := range map[string]int{"a": 1, "c": 2} {
		if n, known, err := ledger.Others(instance); n != want || !known || err != nil {
			t.Errorf("besides %s: %d (known %v, %v), want %d", instance, n, known, err, want)
		}
	}
}
