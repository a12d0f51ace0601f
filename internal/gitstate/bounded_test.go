package gitstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// plantLoose replaces the loose object hash with data, as a guest syncing
// .git back would.
func plantLoose(t testing.TB, ws, hash string, data []byte) {
	t.Helper()
	p := filepath.Join(ws, ".git", "objects", hash[:2], hash[2:])
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantLimit(t *testing.T, err error, what string) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || !strings.Contains(le.What, what) {
		t.Fatalf("got %v, want a LimitError (%s)", err, what)
	}
	if c := coded.Of(err, ""); c.Code != coded.GitLimit || c.Details["object"] != le.Object {
		t.Errorf("coded as %+v", c)
	}
}

// HEAD's commit planted as a loose object of a few kilobytes inflating to
// 64 MiB, whether its header says so or says 200 bytes: the read stops at
// the bound instead of holding it.
func TestALooseObjectInflatesNoFurtherThanTheBounds(t *testing.T) {
	for name, c := range map[string]struct {
		declared int
		what     string
	}{"says its size": {64 << 20, "object of"}, "says less": {200, "past its size"}} {
		t.Run(name, func(t *testing.T) {
			ws, g := committed(t)
			head := strings.TrimSpace(g.run("rev-parse", "HEAD"))
			plantLoose(t, ws, head, testutil.ZlibBomb("commit", c.declared, 64<<20))
			st, err := Read(context.Background(), ws)
			wantLimit(t, err, c.what)
			if st.Commit != head || st.Dirty {
				t.Errorf("state = %+v", st)
			}
		})
	}
}

// A packed object over the bound (a commit whose message is 20 MiB) is
// refused from its size in the pack, before go-git inflates it; loose,
// from its header.
func TestAPackedObjectOverTheBoundIsNotInflated(t *testing.T) {
	for _, packed := range []bool{false, true} {
		t.Run(fmt.Sprint("packed=", packed), func(t *testing.T) {
			ws, g := committed(t)
			msg := filepath.Join(t.TempDir(), "msg")
			os.WriteFile(msg, bytes.Repeat([]byte("m"), 20<<20), 0o644)
			g.run("commit", "-q", "--allow-empty", "-F", msg)
			if packed {
				g.run("repack", "-a", "-d", "-q")
			}
			_, err := Read(context.Background(), ws)
			wantLimit(t, err, "object of")
		})
	}
}

// Within the bounds, a packed repository (deltas included) reads as git
// says.
func TestAPackedRepositoryReadsAsGitSays(t *testing.T) {
	ws, g := committed(t)
	for i := range 5 {
		write(t, ws, "a.txt", strings.Repeat(fmt.Sprintf("line %d\n", i), 200))
		g.run("commit", "-q", "-am", fmt.Sprint("edit ", i))
	}
	g.run("gc", "-q", "--aggressive")
	write(t, ws, "dir/b.txt", "changed\n")
	compare(t, ws, g)
}
