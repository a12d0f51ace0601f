package hostpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

// A copy stops before the entry that would pass the operator's ceiling:
// what it wrote stays (and is named), nothing it did not make goes, and the
// refusal is COPY_LIMIT_EXCEEDED. A single-file write over it writes nothing.
func TestCopyStopsAtTheCeiling(t *testing.T) {
	ws := realTemp(t)
	os.MkdirAll(filepath.Join(ws, "back"), 0o755)
	os.WriteFile(filepath.Join(ws, "back", "mine.txt"), []byte("the person's"), 0o644)
	p := Policy{Roots: []string{ws}, MaxCopyBytes: 3 * 512}
	w, err := p.Writer(ws, "back", Guard{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, err = w.Extract(tarOf(t,
		entry{name: "top/", dir: true},
		entry{name: "top/one", body: strings.Repeat("1", 100)},
		entry{name: "top/two", body: strings.Repeat("2", 600)},
		entry{name: "top/link", link: "one"},
	), "top")
	var ce *coded.Error
	if !errors.As(err, &ce) || ce.Code != CopyLimit {
		t.Fatalf("extract over the ceiling: %v", err)
	}
	if d := ce.Details; d["stopped_at"] != "back/two" || d["written_entries"] != 2 || d["written_bytes"] != int64(100) {
		t.Errorf("details: %v", ce.Details)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "back", "one")); len(b) != 100 {
		t.Errorf("what was written before the stop went: %q", b)
	}
	for _, never := range []string{"two", "link"} {
		if _, err := os.Lstat(filepath.Join(ws, "back", never)); err == nil {
			t.Errorf("%s was written past the ceiling", never)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "back", "mine.txt")); string(b) != "the person's" {
		t.Errorf("a file the copy did not make changed: %q", b)
	}
	f, err := p.Writer(ws, "back/big", Guard{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.WriteFile(make([]byte, 3*512+1), 0o644); !errors.As(err, &ce) || ce.Code != CopyLimit {
		t.Errorf("a single file over the ceiling: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "back", "big")); err == nil {
		t.Error("a refused single file was written")
	}
	if maxCopy(0) != DefaultMaxCopyBytes || maxCopy(-1) != DefaultMaxCopyBytes || maxCopy(5) != 5 {
		t.Error("the default ceiling")
	}
}
