package state

import (
	"path/filepath"
	"testing"
)

// A record asked to be forgotten is never written: the write drops it and
// the file keeps its lineage and counts on.
func TestForgottenRecordsAreDroppedOnWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sandboxforge")
	s, err := open(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Update(func(f *File) {
		f.Sandboxes["api"] = &Sandbox{Phase: Running}
		f.Sandboxes["old"] = &Sandbox{Phase: Destroyed}
	})
	lineage := s.Snapshot().Lineage
	if err := s.Update(func(f *File) { f.Sandboxes["old"].Phase = Forgotten }); err != nil {
		t.Fatal(err)
	}
	onDisk, err := Read(dir, "/ws", "ws_0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	_, kept := onDisk.Sandboxes["old"]
	if kept || onDisk.Sandboxes["api"] == nil || onDisk.Lineage != lineage || onDisk.Serial != 2 {
		t.Errorf("after forgetting: lineage %s serial %d records %v", onDisk.Lineage, onDisk.Serial, onDisk.Sandboxes)
	}
}
