package escape

import (
	"os"
	"path/filepath"
	"testing"
)

// Issue 39, point 6: a guest file whose name is not UTF-8 failed a whole
// copy out after part of it was written (and, copied back into the
// workspace, every later sync of it). Now that one entry is skipped and
// named, escaped, and the rest of the copy lands; a sync leaves it out
// and says so.
func TestANameThatIsNotUTF8SkipsOnlyItself(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	sim := []string{"SBF_ENABLE_SIM=1"}
	if r := w.sbf(sim, "-C", w.ws, "up", "--auto-approve", "--new", "a", "--ttl", "10m"); r.code != 0 {
		t.Fatalf("up: %s", r.stderr)
	}
	defer w.sbf(sim, "-C", w.ws, "destroy", "--auto-approve")
	if r := w.sbf(sim, "-C", w.ws, "exec", "a", "--", "sh", "-c",
		`mkdir -p d && echo x > d/a && printf y > "d/$(printf 'b\377')" && echo z > d/c`); r.code != 0 {
		t.Fatalf("exec: %s", r.stderr)
	}
	r := w.sbf(sim, "-C", w.ws, "cp", "a:d", filepath.Join(w.ws, "out"))
	if r.code != 0 || !contains(r.stderr, `skipped "out/b\xff"`) {
		t.Errorf("cp: %d %s", r.code, r.stderr)
	}
	for _, name := range []string{"a", "c"} {
		if !w.exists(filepath.Join("ws", "out", name)) {
			t.Errorf("out/%s was not copied", name)
		}
	}
	if w.exists("ws/out/b\xff") {
		t.Error("the name that is not UTF-8 was written")
	}
	w.write("ws/src/ok", "fine\n")
	if err := os.WriteFile(filepath.Join(w.ws, "src", "bad\xfe"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = w.sbf(sim, "-C", w.ws, "sync", "--json", "a", filepath.Join(w.ws, "src"), "/dst")
	if r.code != 0 || !contains(r.stdout, `"unnamable_paths": [`) || !contains(r.stdout, `bad\\xfe`) {
		t.Errorf("sync: %d %s %s", r.code, r.stdout, r.stderr)
	}
}
