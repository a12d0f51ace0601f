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

func writeSandbox(t *testing.T, s *Store, name string, phase Phase) {
	t.Helper()
	if err := s.Write(func(tx *Tx) { tx.Sandbox(name).Phase = phase }); err != nil {
		t.Fatal(err)
	}
}

func readState(t *testing.T, dir string) *File {
	t.Helper()
	f, err := Read(dir, "/ws", "ws_0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A transition appends one line to the journal; state.json is written
// whole only when the journal outgrows it.
func TestATransitionAppendsWhatItChanged(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	writeSandbox(t, s, "a", Creating) // the first write makes state.json and the journal's head
	snap, _ := os.ReadFile(filepath.Join(dir, FileName))
	for i := range 20 {
		writeSandbox(t, s, fmt.Sprintf("sb%02d", i), Running)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, FileName)); string(now) != string(snap) {
		t.Errorf("state.json was rewritten by small transitions")
	}
	journal, _ := os.ReadFile(filepath.Join(dir, JournalName))
	if lines := strings.Count(string(journal), "\n"); lines != 21 {
		t.Errorf("journal has %d lines, want a head and 20 entries:\n%s", lines, journal)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(journal)), "\n")[1:] {
		if strings.Count(line, `"sandboxes/`) != 1 || len(line) > 256 {
			t.Errorf("a line holds more than the record it changed: %s", line)
		}
	}
	f := readState(t, dir)
	if f.Serial != 21 || len(f.Sandboxes) != 21 || f.Sandboxes["sb07"].Phase != Running {
		t.Errorf("read back: serial %d, %d records", f.Serial, len(f.Sandboxes))
	}
}

// Past the journal's limit a write rewrites state.json whole and starts a
// new journal; what is read stays the same.
func TestTheJournalIsCompacted(t *testing.T) {
	defer func(old int64) { compactFloor = old }(compactFloor)
	compactFloor = 2048
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	for i := range 100 {
		writeSandbox(t, s, fmt.Sprintf("sb%02d", i%30), []Phase{Creating, Running}[(i/30)%2])
	}
	journal, _ := os.ReadFile(filepath.Join(dir, JournalName))
	if int64(len(journal)) > 2*compactFloor {
		t.Errorf("the journal grew to %d bytes", len(journal))
	}
	f := readState(t, dir)
	if f.Serial != 100 || len(f.Sandboxes) != 30 {
		t.Errorf("after compactions: serial %d, %d records", f.Serial, len(f.Sandboxes))
	}
}

// Two writers (two processes' stores) never lose each other's records:
// each reads what the other appended before it writes.
func TestTwoWritersSeeEachOthersLines(t *testing.T) {
	dir := t.TempDir()
	a, _ := open(t, dir, 0)
	b, _ := open(t, dir, 0)
	for i := range 50 {
		writeSandbox(t, a, fmt.Sprintf("a%02d", i), Running)
		writeSandbox(t, b, fmt.Sprintf("b%02d", i), Running)
	}
	if f := readState(t, dir); len(f.Sandboxes) != 100 || f.Serial != 100 {
		t.Errorf("two writers left %d records at serial %d", len(f.Sandboxes), f.Serial)
	}
	if snap := b.Snapshot(); len(snap.Sandboxes) != 100 {
		t.Errorf("a writer's own view holds %d records", len(snap.Sandboxes))
	}
}

// A line a crashed writer left unfinished is not read, and the next write
// replaces it.
func TestAnUnfinishedLineIsCutOff(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	writeSandbox(t, s, "a", Running)
	writeSandbox(t, s, "b", Running)
	jf, _ := os.OpenFile(filepath.Join(dir, JournalName), os.O_WRONLY|os.O_APPEND, 0)
	jf.WriteString(`{"serial":3,"lineage":"x","sandboxes":{"c":{"pha`)
	jf.Close()
	if f := readState(t, dir); f.Serial != 2 || f.Sandboxes["c"] != nil {
		t.Fatalf("an unfinished line was read: serial %d %v", f.Serial, f.Sandboxes)
	}
	next, _ := open(t, dir, 0)
	writeSandbox(t, next, "d", Running)
	journal, _ := os.ReadFile(filepath.Join(dir, JournalName))
	if strings.Contains(string(journal), `"pha`+"\n") || strings.Contains(string(journal), `{"pha{`) {
		t.Errorf("the unfinished line is still there:\n%s", journal)
	}
	if f := readState(t, dir); f.Serial != 3 || f.Sandboxes["d"] == nil {
		t.Errorf("after the next write: serial %d %v", f.Serial, f.Sandboxes)
	}
}

// A journal that does not continue state.json (state.json restored from
// its backup by hand) is not replayed over it.
func TestAStaleJournalIsNotReplayed(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	writeSandbox(t, s, "a", Running)
	restored, _ := os.ReadFile(filepath.Join(dir, FileName)) // serial 1
	writeSandbox(t, s, "b", Running)
	os.WriteFile(filepath.Join(dir, FileName), append([]byte(nil), restored...), 0o644)
	// The head names serial 1, as the restored file does: make it a different one.
	os.WriteFile(filepath.Join(dir, FileName), []byte(strings.Replace(string(restored), `"serial": 1`,
		`"serial": 0`, 1)), 0o644)
	if f := readState(t, dir); f.Sandboxes["b"] != nil {
		t.Errorf("a stale journal was replayed over the restored file: %v", f.Sandboxes)
	}
}

// A damaged line in the middle is a corrupt state, left as it is.
func TestADamagedJournalLineIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	writeSandbox(t, s, "a", Running)
	jf, _ := os.OpenFile(filepath.Join(dir, JournalName), os.O_WRONLY|os.O_APPEND, 0)
	jf.WriteString("{not json}\n")
	jf.Close()
	_, err := Read(dir, "/ws", "ws_0123456789ab")
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.HasSuffix(ce.Path, JournalName) {
		t.Errorf("Read = %v, want a CorruptError naming the journal", err)
	}
}

// A write that changes nothing writes nothing: the serial stays.
func TestAWriteThatChangesNothingWritesNothing(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	writeSandbox(t, s, "a", Running)
	writeSandbox(t, s, "a", Running)
	if f := readState(t, dir); f.Serial != 1 {
		t.Errorf("serial %d after an unchanged write, want 1", f.Serial)
	}
}

// Between runs state.json alone is the whole state: Close folds the
// journal in.
func TestCloseFoldsTheJournalIntoStateJSON(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	for i := range 5 {
		writeSandbox(t, s, fmt.Sprintf("sb%d", i), Running)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, FileName))
	for i := range 5 {
		if !strings.Contains(string(data), fmt.Sprintf(`"sb%d"`, i)) {
			t.Errorf("state.json lacks sb%d after Close:\n%s", i, data)
		}
	}
	journal, _ := os.ReadFile(filepath.Join(dir, JournalName))
	if strings.Count(string(journal), "\n") != 1 {
		t.Errorf("the journal holds more than its head after Close:\n%s", journal)
	}
}

// A request looks at the state once: its Open under the lock reads only
// what other writers appended since (or everything, once state.json was
// rewritten), and a plan's second look reads nothing when nothing changed.
// What it then holds is what a fresh read holds.
func TestAStoreOpenedAfterALookReadsOnlyWhatChanged(t *testing.T) {
	defer func(old int64) { compactFloor = old }(compactFloor)
	dir := t.TempDir()
	other, _ := open(t, dir, 0)
	writeSandbox(t, other, "a", Creating)
	reads := func(do func()) int64 {
		before := readcount.Now()
		do()
		return readcount.Now().Since(before).Of(readcount.State)
	}
	look := func() *Looked {
		l, err := Look(dir, "/ws", "ws_0123456789ab")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	openAfter := func(l *Looked) *Store {
		s, err := OpenAfter(context.Background(), l, flock.Holder{Command: "sbf test"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	l := look()
	if n := reads(func() {
		if again, err := l.Again(); err != nil || again != l {
			t.Errorf("a second look at an unchanged state: %v, new %v", err, again != l)
		}
		openAfter(l)
	}); n != 0 {
		t.Errorf("an unchanged state was read %d times after the look", n)
	}
	writeSandbox(t, other, "b", Running) // appended after the look
	var s *Store
	if n := reads(func() { s = openAfter(l) }); n != 1 {
		t.Errorf("new journal lines took %d reads, want 1", n)
	}
	if got := s.Snapshot(); got.Sandboxes["b"] == nil || got.Serial != readState(t, dir).Serial {
		t.Errorf("the store missed the other writer's line: %+v", got.Sandboxes)
	}
	l = look()
	compactFloor = 0 // the next write rewrites state.json whole
	writeSandbox(t, other, "c", Running)
	if s = openAfter(l); s.Snapshot().Sandboxes["c"] == nil {
		t.Error("the store missed a rewritten state.json")
	}
	if again, _ := l.Again(); again == l || again.File.Sandboxes["c"] == nil {
		t.Error("a second look missed a rewritten state.json")
	}
	if l.File.Sandboxes["c"] != nil {
		t.Error("the first look's file was changed")
	}
}

// A journal an earlier build wrote (version 1: an entry per write holding
// the records it replaced) is read and appended to; the next compaction
// (here Close) replaces it with this build's, and nothing it held is lost.
func TestAVersion1JournalIsReadThenReplaced(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	writeSandbox(t, s, "a", Running)
	s.Close()
	lineage := readState(t, dir).Lineage
	os.WriteFile(filepath.Join(dir, JournalName), []byte(`{"journal":1,"lineage":"`+lineage+`","serial":1}`+"\n"+
		`{"serial":2,"lineage":"`+lineage+`","written_by":"0.9","sandboxes":{"a":null,"b":{"driver":"sim",`+
		`"instance":"sbf-x-b","phase":"running","updated_at":"2026-11-25T12:00:00Z"}},"tasks":{"t1":{"task_id":"t1",`+
		`"sandbox":"b","instance":"sbf-x-b","command":"make","status":"running","pid":7,`+
		`"created_at":"2026-11-25T12:00:00Z","log_path":"/l","exit_path":"/e"}}}`+"\n"), 0o644)
	if f := readState(t, dir); f.Serial != 2 || f.Sandboxes["a"] != nil || f.Sandboxes["b"] == nil ||
		f.Tasks["t1"] == nil || f.WrittenBy != "0.9" {
		t.Fatalf("the version 1 journal read as serial %d, %v, %v", f.Serial, f.Sandboxes, f.Tasks)
	}
	next, _ := open(t, dir, 0)
	writeSandbox(t, next, "c", Running)
	if f := readState(t, dir); f.Serial != 3 || f.Sandboxes["b"] == nil || f.Sandboxes["c"] == nil ||
		f.Tasks["t1"] == nil {
		t.Errorf("after the write: serial %d, %v, %v", f.Serial, f.Sandboxes, f.Tasks)
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	journal, _ := os.ReadFile(filepath.Join(dir, JournalName))
	if string(journal) != `{"map":1,"journal":2,"meta":{"lineage":"`+lineage+`","serial":3}}`+"\n" {
		t.Errorf("the compaction kept the version 1 journal:\n%s", journal)
	}
	if f := readState(t, dir); f.Serial != 3 || len(f.Sandboxes) != 2 || f.Tasks["t1"] == nil {
		t.Errorf("after the compaction: serial %d, %v, %v", f.Serial, f.Sandboxes, f.Tasks)
	}
}

// Every kind of record goes through journal lines and reads back as the
// writer holds it: tasks, the snapshot list, records dropped.
func TestJournalLinesRoundTripEveryRecord(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	writeSandbox(t, s, "a", Running)
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	writes := []func(tx *Tx){
		func(tx *Tx) { tx.Sandbox("b").Phase = Creating },
		func(tx *Tx) {
			tx.PutTask(&Task{ID: "t1", Sandbox: "a", Command: "make", Status: "running", CreatedAt: at})
		},
		func(tx *Tx) {
			tx.Snapshots(func(f *File) { f.PutSnapshot(&Snapshot{Sandbox: "a", Name: "s1", CreatedAt: at}) })
		},
		func(tx *Tx) { tx.Task("t1").Status = "succeeded" },
		func(tx *Tx) { tx.Sandbox("a").Phase = Forgotten },
		func(tx *Tx) { tx.Snapshots(func(f *File) { f.DropSnapshotsOf("a", "") }) },
	}
	for _, w := range writes {
		if err := s.Write(w); err != nil {
			t.Fatal(err)
		}
	}
	journal, _ := os.ReadFile(filepath.Join(dir, JournalName))
	if lines := strings.Count(string(journal), "\n"); lines != 1+len(writes) {
		t.Errorf("the journal has %d lines, want a head and %d writes:\n%s", lines, len(writes), journal)
	}
	want, _ := json.Marshal(s.Snapshot())
	if got, _ := json.Marshal(readState(t, dir)); string(got) != string(want) {
		t.Errorf("read back:\n%s\nwant\n%s", got, want)
	}
	if f := readState(t, dir); f.Sandboxes["a"] != nil || f.Tasks["t1"].Status != "succeeded" || f.Serial != 7 {
		t.Errorf("read back: serial %d, %v, %v", f.Serial, f.Sandboxes, f.Tasks)
	}
}
