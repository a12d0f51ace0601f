package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 41, point 3: a mount was resolved with the operating system's
// EvalSymlinks before it was held to the workspace, so validate answered
// "does not exist" for a missing folder outside the workspace and "outside"
// for one that is there, and named where a link in the workspace led: a
// spec the agent wrote, validated over MCP or the CLI, probed the host.
// Now a mount outside the workspace and the allowed folders is refused as
// outside before anything there is looked at, named as written.
func TestMountsOutsideTellNothingOfTheHost(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	if err := os.Symlink(filepath.Join(w.canary, "none"), filepath.Join(w.ws, "peek-missing")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(w.canary, "notes"), filepath.Join(w.ws, "peek-there")); err != nil {
		t.Fatal(err)
	}
	outside := []string{filepath.Join(w.canary, "notes"), filepath.Join(w.canary, "none"), "../canary/notes",
		"../canary/none", "peek-missing", "peek-there", "peek-missing/deeper", "peek-there/today.txt"}
	mounts := append(append([]string{}, outside...), "not-here-yet")
	w.write("ws/.sandboxforge.toml", "[vm]\ndriver = \"sim\"\nmounts = [\""+strings.Join(mounts, "\", \"")+"\"]\n")
	r := w.sbf(nil, "-C", w.ws, "validate")
	lines := strings.Split(r.stdout+r.stderr, "\n")
	say := func(i int) string {
		for _, l := range lines {
			if strings.Contains(l, fmt.Sprintf("vm.mounts[%d]:", i)) {
				return l
			}
		}
		return ""
	}
	for i, m := range outside {
		l := say(i)
		if !contains(l, "outside the workspace") || contains(l, "does not exist") ||
			strings.HasPrefix(m, "peek") && contains(l, "canary") {
			t.Errorf("mount %s: %q, want outside, named as written\n%s", m, l, r.stdout+r.stderr)
		}
	}
	// Inside the workspace the answer may say what is there: it is the
	// workspace's own.
	if l := say(len(outside)); !contains(l, "does not exist") {
		t.Errorf("a missing folder inside the workspace: %q", l)
	}
	if r.code != 1 {
		t.Errorf("validate: exit %d, want 1", r.code)
	}
}
