package state

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
)

func codeOf(err error) string {
	if c := coded.Of(err, ""); c != nil {
		return c.Code
	}
	return ""
}

// Issue 39, point 5: the state's files are sbf's own. A link among them
// (to a file outside, to /dev/zero) is STATE_FILE_LINK for a read and for
// a store, nothing is appended through it; a file larger than sbf writes
// is STATE_FILE_INVALID, never read.
func TestTheStatesFilesAreNeverLinksAndReadsAreBounded(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("links and devices are unix's here")
	}
	outside := filepath.Join(t.TempDir(), "journal")
	head := `{"journal":1,"lineage":"","serial":0}` + "\n" // continues a state never written
	for _, name := range []string{JournalName, FileName, LockName, ".gitignore"} {
		for _, target := range []string{outside, "/dev/zero"} {
			dir := filepath.Join(t.TempDir(), ".sandboxforge")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(outside, []byte(head), 0o644)
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			_, rerr := Read(dir, "/ws", "ws_0123456789ab")
			s, oerr := open(t, dir, 0)
			if oerr == nil {
				oerr = s.Write(func(tx *Tx) { tx.Sandbox("a").Phase = Creating })
			}
			if name != LockName && name != ".gitignore" && codeOf(rerr) != coded.StateFileLink {
				t.Errorf("read with %s -> %s: %v", name, target, rerr)
			}
			if codeOf(oerr) != coded.StateFileLink {
				t.Errorf("a store with %s -> %s: %v", name, target, oerr)
			}
			if data, _ := os.ReadFile(outside); string(data) != head {
				t.Errorf("%s -> %s: the target was written: %q", name, target, data)
			}
		}
	}
	dir := filepath.Join(t.TempDir(), ".sandboxforge")
	os.MkdirAll(dir, 0o755)
	f, _ := os.Create(filepath.Join(dir, JournalName))
	f.Truncate(MaxFileBytes + 1) // sparse: costs no disk
	f.Close()
	start := time.Now()
	if _, err := Read(dir, "/ws", "ws_0123456789ab"); codeOf(err) != coded.StateFileInvalid {
		t.Errorf("a journal past %d bytes: %v", MaxFileBytes, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("refusing the journal took %s: it was read", took)
	}
}

// The folder itself: a .sandboxforge that is a link is refused before
// anything is made or read through it.
func TestALinkedStateFolderIsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("links are unix's here")
	}
	ws, outside := t.TempDir(), t.TempDir()
	dir := filepath.Join(ws, ".sandboxforge")
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir, ws, "ws_0123456789ab"); codeOf(err) != coded.StateFileLink {
		t.Errorf("read: %v", err)
	}
	if _, err := open(t, dir, 0); codeOf(err) != coded.StateFileLink {
		t.Errorf("open: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("made through the link: %v", entries)
	}
}

// The host index and the ledger live in the state home: a link there is
// refused too, and nothing is written through it.
func TestHostMapsRefuseLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("links are unix's here")
	}
	home, outside := t.TempDir(), filepath.Join(t.TempDir(), "index")
	os.WriteFile(outside, []byte(`{"map":1,"all":{}}`+"\n"), 0o644)
	os.Symlink(outside, filepath.Join(home, "instances.index"))
	os.MkdirAll(filepath.Join(home, "admission"), 0o755)
	os.Symlink("/dev/zero", filepath.Join(home, "admission", "ledger"))
	idx := OpenHostIndex(home)
	if _, err := idx.All(); codeOf(err) != coded.StateFileLink {
		t.Errorf("index read: %v", err)
	}
	if err := idx.Put(t.Context(), IndexEntry{Instance: "sbf-x-a", Sandbox: "a"}); codeOf(err) != coded.StateFileLink {
		t.Errorf("index write: %v", err)
	}
	if _, _, err := OpenLedger(home).Instances(); codeOf(err) != coded.StateFileLink {
		t.Errorf("ledger: %v", err)
	}
	if data, _ := os.ReadFile(outside); string(data) != `{"map":1,"all":{}}`+"\n" {
		t.Errorf("written through the link: %q", data)
	}
}
