package hostpath

import (
	"os"
	"path/filepath"
	"testing"
)

// No archive entry leaves its destination by its name: not a .. name, not
// an absolute one, not a name through a link the same archive made first
// (links are made last), not one through a link already there. Each such
// archive lands nothing outside.
func TestArchiveEntriesStayInsideByName(t *testing.T) {
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(outside, 0o755)
	os.Symlink(outside, filepath.Join(ws, "already-out"))
	for name, entries := range map[string][]entry{
		"dotdot":   {{name: "top/../../outside/dotdot", body: "x"}},
		"up":       {{name: "../outside/up", body: "x"}},
		"absolute": {{name: "/" + filepath.ToSlash(outside) + "/abs", body: "x"}},
		"new link": {{name: "top/lnk", link: "../../outside"}, {name: "top/lnk/through-new-link", body: "x"}},
		"old link": {{name: "top/../already-out/through-old-link", body: "x"}},
	} {
		w, err := Policy{Roots: []string{ws}}.Writer(ws, "out-"+name, Guard{})
		if err != nil {
			t.Fatal(err)
		}
		all := append([]entry{{name: "top/", dir: true}}, entries...)
		w.Extract(tarOf(t, append(all, entry{name: "top/fine.txt", body: "fine"})...), "top")
		w.Close()
		if got, _ := os.ReadDir(outside); len(got) != 0 {
			t.Errorf("%s: entries landed outside the destination: %v", name, got)
		}
	}
}
