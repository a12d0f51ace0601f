package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	f := readState(t, dir)
	if f.Serial != 21 || len(f.Sandboxes) != 21 || f.Sandboxes["sb07"].Phase != Running {
		t.Errorf("read back: serial %d, %d records", f.Serial, len(f.Sandboxes))
	}
}

// Past the journal's limit a write rewrites state.json whole and starts a
// new journal; what is read stays the same.
func TestTheJournalIsCompacted(t *testing.T) {
	defer func(old int64) { compactAt = old }(compactAt)
	compactAt = 2048
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	for i := range 100 {
		writeSandbox(t, s, fmt.Sprintf("sb%02d", i%30), []Phase{Creating, Running}[(i/30)%2])
	}
	journal, _ := os.ReadFile(filepath.Join(dir, JournalName))
	if int64(len(journal)) > 2*compactAt {
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
	defer func(old int64) { compactAt = old }(compactAt)
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
	compactAt = 0 // the next write rewrites state.json whole
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
