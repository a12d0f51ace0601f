package hostpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resolveWorld: base/ws is the root; base/outside holds a secret; links in
// the root lead inside, out, and out through a chain that a lexical clean
// of the target would keep inside (issue 29, point 5).
func resolveWorld(t *testing.T) (base, ws string) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(base, "ws")
	for _, d := range []string{"ws/src/deep", "outside/sub"} {
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	os.WriteFile(filepath.Join(base, "outside/secret"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(ws, "file"), []byte("x"), 0o644)
	for link, target := range map[string]string{"in": "src/deep", "abs-in": filepath.Join(ws, "src"),
		"out": "../outside", "abs-out": filepath.Join(base, "outside"), "dangling-out": "../nothing-here",
		"a": ".", "c": "a/..", "d": "c/outside/secret", "up-missing": "nope/../../outside"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(ws, filepath.Join(base, "ws-link")) // beside the root: a way in, as /tmp on macOS
	return base, ws
}

func TestResolveFollowsLinksOnlyOnTheWay(t *testing.T) {
	base, ws := resolveWorld(t)
	roots := []string{ws}
	for path, want := range map[string][2]string{
		ws:                                 {ws, ""},
		filepath.Join(ws, "in"):            {filepath.Join(ws, "src/deep"), ""},
		filepath.Join(ws, "abs-in/x/y"):    {filepath.Join(ws, "src"), "x/y"},
		filepath.Join(ws, "a/a/src"):       {filepath.Join(ws, "src"), ""},
		filepath.Join(ws, "src/new/file"):  {filepath.Join(ws, "src"), "new/file"},
		filepath.Join(base, "ws-link/src"): {filepath.Join(ws, "src"), ""},
		filepath.Join(ws, "src/../in"):     {filepath.Join(ws, "src/deep"), ""},
		"/":                                {"/", ""},
		filepath.Join(ws, "c"):             {base, ""}, // holds the root: the caller checks Within
	} {
		real, missing, err := Resolve(path, roots)
		if err != nil || real != want[0] || missing != want[1] {
			t.Errorf("%s: %q %q %v, want %q %q", path, real, missing, err, want[0], want[1])
		}
	}
	for _, rel := range []string{"ws/out", "ws/out/secret", "ws/out/missing", "ws/abs-out/sub", "ws/dangling-out",
		"ws/dangling-out/x", "ws/d", "ws/c/outside", "outside", "outside/secret", "outside/missing/x",
		"missing", "ws-other/x", "ws/../outside/secret"} {
		if real, _, err := Resolve(filepath.Join(base, rel), roots); !errors.Is(err, ErrOutside) {
			t.Errorf("%s: %q %v, want ErrOutside", rel, real, err)
		}
	}
	if _, _, err := Resolve(filepath.Join(ws, "up-missing"), roots); err == nil || errors.Is(err, ErrOutside) {
		t.Errorf("a target climbing out of a missing folder inside: %v", err)
	}
	if _, _, err := Resolve(filepath.Join(ws, "file/x"), roots); err == nil || errors.Is(err, ErrOutside) {
		t.Errorf("below a file inside: %v", err)
	}
}

// Outside the roots, what is there and what is not get the same answer:
// the folder is not even looked into.
func TestResolveIsNoOracleOutside(t *testing.T) {
	base, ws := resolveWorld(t)
	locked := filepath.Join(base, "outside", "locked")
	os.MkdirAll(locked, 0o755)
	os.Symlink(locked, filepath.Join(locked, "loop"))
	for _, rel := range []string{"outside/secret", "outside/missing", "outside/secret/below", "outside/sub",
		"outside/locked/loop/loop/loop/loop/loop/loop/loop/loop/loop/loop/loop/loop/loop/loop/loop/loop/loop"} {
		real, missing, err := Resolve(filepath.Join(base, rel), []string{ws})
		if real != "" || missing != "" || err != ErrOutside {
			t.Errorf("%s: %q %q %v", rel, real, missing, err)
		}
	}
}

func TestResolveStopsAtALinkLoopInside(t *testing.T) {
	_, ws := resolveWorld(t)
	os.Symlink("loop2", filepath.Join(ws, "loop1"))
	os.Symlink("loop1", filepath.Join(ws, "loop2"))
	if _, _, err := Resolve(filepath.Join(ws, "loop1"), []string{ws}); err == nil || errors.Is(err, ErrOutside) {
		t.Errorf("a loop: %v", err)
	}
}

// Confine and the writer refuse a host path outside the roots with the
// same words whether something is there or not (issue 29, point 11).
func TestRefusalsOutsideAreTheSameWhateverIsThere(t *testing.T) {
	base, ws := resolveWorld(t)
	p := Policy{Roots: []string{ws}}
	refusal := func(path string) [2]string {
		var out [2]string
		if _, err := p.Confine(ws, path); err != nil {
			out[0] = err.Error()
		}
		if w, err := p.Writer(ws, path, Guard{}); err == nil {
			w.Close()
		} else {
			out[1] = err.Error()
		}
		return out
	}
	for _, pair := range [][2]string{{"outside/secret", "outside/missing"}, {"outside/secret/x", "outside/nope/x"},
		{"outside/sub", "nothing"}} {
		// The same spelling for both: one that exists, then the same name made to be missing.
		there, gone := filepath.Join(base, pair[0]), filepath.Join(base, pair[1])
		a := refusal(there)
		b := refusal(gone)
		for i := range a {
			if a[i] == "" || b[i] == "" {
				t.Fatalf("not refused: %q %q", a, b)
			}
		}
		// Only the path given differs; with it swapped the words are equal.
		if a0 := replaceAll(a, there, gone); a0 != b {
			t.Errorf("refusals differ:\n%q\n%q", a0, b)
		}
	}
}

func replaceAll(s [2]string, old, new string) [2]string {
	for i := range s {
		s[i] = strings.ReplaceAll(s[i], old, new)
	}
	return s
}

// Resolve costs what filepath.EvalSymlinks does: one Lstat per element.
func BenchmarkResolve(b *testing.B) {
	base, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	deep := filepath.Join(ws, "a", "b", "c", "d")
	os.MkdirAll(deep, 0o755)
	b.Run("Resolve", func(b *testing.B) {
		for b.Loop() {
			Resolve(deep, []string{ws})
		}
	})
	b.Run("EvalSymlinks", func(b *testing.B) {
		for b.Loop() {
			filepath.EvalSymlinks(deep)
		}
	})
}

// Real is the walk with every place allowed, for paths the operator named:
// links out are followed (the operator's own), a missing name is lstat's
// ENOENT at the first name not there, as EvalSymlinks said it.
func TestRealFollowsTheOperatorsLinksAnywhere(t *testing.T) {
	base, ws := resolveWorld(t)
	for path, want := range map[string]string{
		filepath.Join(ws, "abs-out"):       filepath.Join(base, "outside"),
		filepath.Join(ws, "d"):             filepath.Join(base, "outside/secret"),
		filepath.Join(base, "ws-link/out"): filepath.Join(base, "outside"),
	} {
		if real, err := Real(path); err != nil || real != want {
			t.Errorf("Real(%s) = %q, %v; want %q", path, real, err, want)
		}
	}
	_, err := Real(filepath.Join(ws, "dangling-out/x"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "lstat "+filepath.Join(base, "nothing-here")) {
		t.Errorf("a missing name: %v", err)
	}
	if real, missing, err := RealPart(filepath.Join(ws, "out/sub/new/file")); err != nil ||
		real != filepath.Join(base, "outside/sub") || missing != filepath.Join("new", "file") {
		t.Errorf("RealPart: %q %q %v", real, missing, err)
	}
}
