package sim

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A record reads whole whatever its size beside the buffer: smaller,
// exactly its size, and larger (read on past it), and a missing one is
// fs.ErrNotExist, which List takes for an instance deleted meanwhile.
func TestReadRecordReadsWholeFiles(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 15, 16, 17, 32, 33, 100} {
		want := bytes.Repeat([]byte{'x'}, size)
		path := filepath.Join(dir, "r.json")
		if err := os.WriteFile(path, want, 0o600); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		got, err := readRecord(path, buf)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("size %d: read %d bytes, %v", size, len(got), err)
		}
		if size > len(buf) && len(got) > 0 && &got[0] == &buf[0] {
			t.Errorf("size %d: the caller's buffer holds a record larger than it", size)
		}
	}
	if _, err := readRecord(filepath.Join(dir, "gone.json"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing record: %v, want fs.ErrNotExist", err)
	}
}
