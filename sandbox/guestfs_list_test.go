package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Guests without GNU find (busybox, a sim on macOS) list with one stat
// per entry; both ways must give the same entries.
func TestPortableListingMatchesGNUFind(t *testing.T) {
	if err := exec.Command("find", ".", "-maxdepth", "0", "-printf", "").Run(); err != nil {
		t.Skip("no GNU find here")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o750)
	os.WriteFile(filepath.Join(dir, "a", "b", "f"), []byte("12345"), 0o604)
	os.WriteFile(filepath.Join(dir, "new\nline 'q' \\"), nil, 0o644)
	os.Symlink("a/b/f", filepath.Join(dir, "l"))
	for _, depth := range []string{"-maxdepth 1", ""} {
		gnu, portable := listHere(t, dir, gnuList(depth)), listHere(t, dir, portableList(depth))
		if len(gnu) < 3 || !slices.Equal(gnu, portable) {
			t.Errorf("depth %q:\n GNU      %v\n portable %v", depth, gnu, portable)
		}
	}
}

func listHere(t *testing.T, dir, script string) []string {
	t.Helper()
	cmd := exec.Command("sh", "-c", `cd -- "$f" && `+script)
	cmd.Env = append(os.Environ(), "f="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	entries, cut := parseEntries(string(out))
	if cut {
		t.Fatalf("%s: output cut: %q", script, out)
	}
	var rows []string
	for _, e := range entries {
		// GNU find gives mtimes to the nanosecond, stat to the second.
		rows = append(rows, strings.Join([]string{e.Path, e.Type, e.Mode, strconv.FormatInt(e.Size, 10),
			e.Modified.Truncate(1e9).String()}, "|"))
	}
	slices.Sort(rows)
	return rows
}
