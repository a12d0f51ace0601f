package hostpath

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// links makes symlinks below dir: path → target.
func links(t *testing.T, dir string, pairs ...string) {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		p := filepath.Join(dir, pairs[i])
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(pairs[i+1], p); err != nil {
			t.Fatal(err)
		}
	}
}

// The resolver lands where the kernel lands: a/.. is where a leads, then
// up. Every path here exists, so filepath.EvalSymlinks (the kernel's walk)
// is the reference.
func TestResolverFollowsLinksAsTheKernelDoes(t *testing.T) {
	base := realTemp(t)
	ws := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "back", "sub", "deep"), 0o755)
	os.MkdirAll(filepath.Join(ws, "other"), 0o755)
	links(t, ws, "back/a", ".", "back/c", "a/..", "back/s", "sub/deep", "back/t", "s/..", "back/abs", ws+"/other",
		"back/sub/up", "../../other")
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	rv := resolver{root: root, rootAbs: ws}
	for _, rel := range []string{"back/a", "back/c", "back/a/a/c", "back/s", "back/t", "back/abs", "back/sub/up",
		"back/c/other", "back/s/..", "back/sub/up/..", "back/sub/../a", "back/sub/deep/../../s", "back/sub/deep/../up"} {
		want, err := filepath.EvalSymlinks(filepath.Join(ws, rel))
		if err != nil {
			t.Fatal(err)
		}
		got, err := rv.resolve(rel, true)
		if got = filepath.Join(ws, filepath.FromSlash(got)); err != nil || got != want {
			// The resolver may refuse (a .. out of a link) but never land elsewhere.
			if !errors.Is(err, errClimbs) {
				t.Errorf("%s: %s %v, the kernel says %s", rel, got, err, want)
			}
		}
	}
}

// Links are judged where they will be, in the order they will exist, through
// what is already there: the chain a -> ., c -> a/.., d -> c/../secret is
// kept out, and so are its relatives; what stays inside arrives.
func TestWriterExtractJudgesLinksWhereTheyLead(t *testing.T) {
	base := realTemp(t)
	ws := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "back"), 0o755)
	os.WriteFile(filepath.Join(base, "secret"), []byte("S"), 0o600)
	links(t, ws, "up", "..") // the person's, leading out
	w, err := Policy{Roots: []string{ws}}.Writer(ws, "back", Guard{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rep, err := w.Extract(tarOf(t,
		entry{name: "top/", dir: true},
		entry{name: "top/sub/", dir: true},
		entry{name: "top/a", link: "."},
		entry{name: "top/c", link: "a/.."},
		entry{name: "top/d", link: "c/../secret"},
		entry{name: "top/viaperson", link: "../up/secret"},
		entry{name: "top/tolink", link: "c"},
		entry{name: "top/notyet", link: "nothere/../../secret"},
		entry{name: "top/dangling", link: "nothere/file"},
		entry{name: "top/loop1", link: "loop2"},
		entry{name: "top/loop2", link: "loop1"},
		entry{name: "top/self", link: "self/x"},
		entry{name: "top/x", link: "sub/.."},
		entry{name: "top/sub", link: "."},
		entry{name: "top/sub/in", link: "../a"},
		entry{name: "top/sub/out", link: "../../../secret"},
	), "top")
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]string{"a": ".", "dangling": "nothere/file", "loop1": "loop2", "x": "sub/..", "sub/in": "../a",
		"tolink": "c"} // c was not made: tolink dangles inside

	for name, target := range kept {
		if got, err := os.Readlink(filepath.Join(ws, "back", name)); err != nil || got != target {
			t.Errorf("%s: %q %v, want a link to %q", name, got, err, target)
		}
	}
	var skipped []string
	for _, l := range rep.SkippedLinks {
		skipped = append(skipped, strings.TrimPrefix(l.Path, "back/")+": "+l.Reason)
		if _, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(l.Path))); err == nil && l.Path != "back/sub" {
			t.Errorf("%s was written", l.Path)
		}
	}
	slices.Sort(skipped)
	want := []string{"c: " + errClimbs.Error(), "d: " + errClimbs.Error(), "loop2: " + errLoop.Error(),
		"notyet: " + errClimbs.Error(), "self: " + errLoop.Error(), "sub/out: " + errOutside.Error(),
		"sub: " + errReplaces.Error(), "viaperson: " + errOutside.Error()}
	if !slices.Equal(skipped, want) {
		t.Errorf("skipped links:\n%s\nwant\n%s", strings.Join(skipped, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range []string{"back/d", "back/c", "back/tolink", "back/sub/out"} {
		if b, err := os.ReadFile(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s reads %q", p, b)
		}
	}
}

// A later copy cannot bend a link an earlier one made: a .. after a link
// or after a name not there yet was refused, and a folder is never turned
// into a link, so replacing a link moves only what lies below it.
func TestLaterCopiesCannotBendEarlierLinks(t *testing.T) {
	base := realTemp(t)
	ws := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "back", "real"), 0o755)
	p := Policy{Roots: []string{ws}}
	extract := func(entries ...entry) Report {
		w, err := p.Writer(ws, "back", Guard{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		rep, err := w.Extract(tarOf(t, append([]entry{{name: "top/", dir: true}}, entries...)...), "top")
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	first := extract(entry{name: "top/y", link: "real"}, entry{name: "top/x", link: "y/.."},
		entry{name: "top/z", link: "real/.."}, entry{name: "top/m", link: "missing/.."})
	second := extract(entry{name: "top/y", link: "."}, entry{name: "top/real", link: "."},
		entry{name: "top/missing", link: "."})
	if len(first.SkippedLinks) != 2 || len(second.SkippedLinks) != 1 {
		t.Errorf("first %+v\nsecond %+v", first.SkippedLinks, second.SkippedLinks)
	}
	if got, _ := filepath.EvalSymlinks(filepath.Join(ws, "back", "z")); got != filepath.Join(ws, "back") {
		t.Errorf("z leads to %s", got)
	}
	for _, gone := range []string{"x", "m"} {
		if _, err := os.Lstat(filepath.Join(ws, "back", gone)); err == nil {
			t.Errorf("%s was written", gone)
		}
	}
}

// A single-file destination is resolved as the kernel would: through the
// chain, c/.. is above the workspace, so it is refused rather than cleaned
// lexically into back/.
func TestWriterDestinationThroughALinkChain(t *testing.T) {
	base := realTemp(t)
	ws := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "back"), 0o755)
	os.WriteFile(filepath.Join(base, "secret"), []byte("S"), 0o600)
	links(t, ws, "back/a", ".", "back/c", "a/..", "back/d", "c/../secret")
	p := Policy{Roots: []string{ws}}
	for _, dest := range []string{"back/c/../secret", "back/c/../new", "back/a/c/../x"} {
		if w, err := p.Writer(ws, dest, Guard{}); !denied(err) {
			t.Errorf("%s: %v", dest, err)
			if err == nil {
				w.Close()
			}
		}
	}
	w, err := p.Writer(ws, "back/d", Guard{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.WriteFile([]byte("x"), 0o644); !errors.Is(err, ErrLink) {
		t.Errorf("a write onto the chain's end: %v", err)
	}
	if _, err := w.Extract(tarOf(t, entry{name: "f", body: "x"}), "f"); err != nil {
		t.Errorf("a file copied onto a link replaces the link: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "secret")); string(b) != "S" {
		t.Errorf("the secret outside changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "back", "d")); string(b) != "x" {
		t.Errorf("back/d = %q", b)
	}
	// Inside, the same path resolves where the kernel says: a/c is ws.
	if _, err := p.Confine(ws, "back/a/c/back"); err != nil {
		t.Errorf("back/a/c/back: %v", err)
	}
}

func realTemp(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
