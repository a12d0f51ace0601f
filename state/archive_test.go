package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/internal/readcount"
)

var ended = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// endRecords writes n destroyed sandboxes that had a VM, each with a task,
// a live one, and a destroyed one never made.
func endRecords(t *testing.T, s *Store, n int) {
	t.Helper()
	err := s.Write(func(tx *Tx) {
		for i := range n {
			name := fmt.Sprintf("gone%04d", i)
			rec := tx.Sandbox(name)
			rec.Phase, rec.Instance, rec.VM, rec.CreatedAt, rec.UpdatedAt = Destroyed, "i-"+name,
				&VM{Name: "i-" + name, CPUs: 2}, &ended, ended.Add(time.Duration(i)*time.Minute)
			tx.PutTask(&Task{ID: "t-" + name, Sandbox: name, Status: "stopped"})
		}
		tx.Sandbox("live").Phase = Running
		tx.Sandbox("never").Phase = Destroyed // rolled back before a VM was made: its run forgets it
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Records of destroyed sandboxes leave the state every run reads at the
// end of the run that wrote them, with their tasks, for the archive; the
// archive's readers see them beside the state's.
func TestEndedRecordsLeaveForTheArchive(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	s.Archive(func(name string) bool { return name != "gone0002" }) // the files still declare gone0002
	endRecords(t, s, 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f := readState(t, dir)
	if len(f.Sandboxes) != 3 || f.Sandboxes["live"] == nil || f.Sandboxes["never"] == nil || len(f.Tasks) != 1 ||
		f.Sandboxes["gone0002"] == nil {
		t.Fatalf("the state keeps %d records and %d tasks: %v", len(f.Sandboxes), len(f.Tasks), f.Sandboxes)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, FileName)); strings.Contains(string(data), "gone0001") {
		t.Errorf("state.json still names an ended sandbox")
	}
	all, err := WithEnded(dir, f)
	if err != nil || len(all.Sandboxes) != 5 || all.Sandboxes["gone0001"].Phase != Destroyed ||
		all.Tasks["t-gone0001"] == nil || len(f.Sandboxes) != 3 {
		t.Fatalf("with the archive: %v, %d records, %d tasks (the state's: %d)", err, len(all.Sandboxes),
			len(all.Tasks), len(f.Sandboxes))
	}
	if sb, ok, err := Ended(dir, "gone0000"); err != nil || !ok || sb.Instance != "i-gone0000" {
		t.Errorf("Ended(gone0000) = %+v %v %v", sb, ok, err)
	}
	// A sandbox made again under an archived name is the state's.
	s, _ = open(t, dir, 0)
	s.Archive(func(string) bool { return true })
	writeSandbox(t, s, "gone0000", Running)
	s.Close()
	if all, _ := WithEnded(dir, readState(t, dir)); all.Sandboxes["gone0000"].Phase != Running {
		t.Errorf("the archive's record hides the live one: %+v", all.Sandboxes["gone0000"])
	}
}

// A state.json an earlier build wrote, ended records inside, still reads
// whole; the next run that writes moves them.
func TestEndedRecordsOfAnOlderStateFileMove(t *testing.T) {
	dir := t.TempDir()
	old := `{"version":1,"lineage":"l-1","serial":4,"workspace_root":"/ws","workspace_id":"ws_0123456789ab",
"sandboxes":{"web":{"driver":"sim","instance":"i-web","phase":"destroyed","created_at":"2026-11-20T12:00:00Z",
"updated_at":"2026-11-21T12:00:00Z"},"api":{"driver":"sim","instance":"i-api","phase":"running",
"updated_at":"2026-11-21T12:00:00Z"}}}`
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if f := readState(t, dir); len(f.Sandboxes) != 2 || f.Sandboxes["web"].Phase != Destroyed {
		t.Fatalf("an older state file reads as %+v", f.Sandboxes)
	}
	s, _ := open(t, dir, 0)
	s.Archive(func(string) bool { return true })
	writeSandbox(t, s, "api", Stopped)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if f := readState(t, dir); len(f.Sandboxes) != 1 || f.Serial != 5 || f.Lineage != "l-1" {
		t.Errorf("after a run: %+v serial %d", f.Sandboxes, f.Serial)
	}
	if sb, ok, _ := Ended(dir, "web"); !ok || sb.Instance != "i-web" {
		t.Errorf("web is not archived: %+v", sb)
	}
}

// ForgetEnded drops what outlived keep_records, with its tasks, naming the
// instances; until one is due it reads no archive (its head's first bytes
// say when the oldest record ended, however large the archive).
func TestArchivedRecordsGoAfterKeepRecords(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, 0)
	s.Archive(func(string) bool { return true })
	endRecords(t, s, 500) // far more than the bytes headMeta reads
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(dir, ArchiveName)); err != nil || info.Size() < 64<<10 {
		t.Fatalf("archive: %v %v", info, err)
	}
	keep := 7 * 24 * time.Hour
	s, _ = open(t, dir, 0)
	defer s.Close()
	before := readcount.Now()
	if gone, err := s.ForgetEnded(context.Background(), keep, ended.Add(keep-time.Second)); err != nil || len(gone) != 0 {
		t.Fatalf("before keep_records: %v %v", gone, err)
	}
	if n := readcount.Now().Since(before).Of(readcount.Archive); n != 0 {
		t.Errorf("a look before keep_records read the archive %d times", n)
	}
	gone, err := s.ForgetEnded(context.Background(), keep, ended.Add(keep+90*time.Second)) // gone0000 and gone0001 are due
	slices.Sort(gone)
	if err != nil || strings.Join(gone, ",") != "i-gone0000,i-gone0001" {
		t.Fatalf("forgotten: %v %v", gone, err)
	}
	all, _ := WithEnded(dir, readState(t, dir))
	if all.Sandboxes["gone0001"] != nil || all.Tasks["t-gone0001"] != nil || all.Sandboxes["gone0002"] == nil {
		t.Errorf("after keep_records: gone0001 %v, its task %v, gone0002 %v", all.Sandboxes["gone0001"],
			all.Tasks["t-gone0001"], all.Sandboxes["gone0002"])
	}
	if gone, _ := s.ForgetEnded(context.Background(), keep, ended.Add(keep+90*time.Second)); len(gone) != 0 {
		t.Errorf("forgotten twice: %v", gone)
	}
}

// The archive is sbf's own file (SECURITY.md rule 42): a link in its place
// is refused, by its readers and by a run's look at its head, never read.
func TestTheArchiveIsNeverALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	head := `{"map":1,"meta":{"oldest":"2020-01-01T00:00:00Z"},"all":{}}` + "\n"
	if err := os.WriteFile(target, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, ArchiveName)); err != nil {
		t.Fatal(err)
	}
	var own *ownfile.Error
	if _, err := WithEnded(dir, New("/ws", "ws_0123456789ab")); !errors.As(err, &own) {
		t.Errorf("WithEnded through a link: %v", err)
	}
	if _, _, err := Ended(dir, "web"); !errors.As(err, &own) {
		t.Errorf("Ended through a link: %v", err)
	}
	s, _ := open(t, dir, 0)
	defer s.Close()
	if _, err := s.ForgetEnded(context.Background(), time.Hour, ended); !errors.As(err, &own) {
		t.Errorf("a run's look at the archive's head through a link: %v", err)
	}
}
