package reconcile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/spec"
)

// servedWorld: base/ws is a served workspace (its spec says deny, 15m, 1)
// with a subfolder of no spec, one with its own, a file and a link out;
// base/plain is a served root without a spec; base/other is not served.
func servedWorld(t *testing.T) (base string, p policy.Policy) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range map[string]string{
		"ws/" + spec.FileName:       "[network]\negress = \"deny\"\n",
		"ws/own/" + spec.FileName:   "[vm]\ncpus = 1\n",
		"ws/sub/deeper/.keep":       "",
		"ws/file":                   "x",
		"plain/sub/.keep":           "",
		"other/" + spec.FileName:    "",
		"other/sub/.keep":           "",
		"outside-secret/credential": "x",
	} {
		path := filepath.Join(base, rel)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(filepath.Join(base, "other"), filepath.Join(base, "ws", "out"))
	return base, policy.Policy{WorkspaceRoots: []string{filepath.Join(base, "ws"), filepath.Join(base, "plain")}}
}

func TestAFolderBelowAWorkspaceIsThatWorkspace(t *testing.T) {
	base, p := servedWorld(t)
	for given, want := range map[string]string{
		"ws":            "ws",
		"ws/sub":        "ws", // the case: no spec of its own, so the workspace's policy
		"ws/sub/deeper": "ws",
		"ws/own":        "ws/own", // a spec of its own: a workspace of its own, still served
		"plain":         "plain",
		"plain/sub":     "plain/sub", // no spec up to its served root: defaults, as that root has
	} {
		got, err := ServedWorkspace(p, filepath.Join(base, given), nil)
		if err != nil || got != filepath.Join(base, want) {
			t.Errorf("%s: %q %v, want %s", given, got, err, want)
		}
	}
	// The client declared ws/sub only: its workspace, ws, is not the client's.
	_, err := ServedWorkspace(p, filepath.Join(base, "ws/sub"), []string{filepath.Join(base, "ws/sub")})
	if code(err) != policy.WorkspaceNotAllowed || !strings.Contains(err.Error(), "belongs to the workspace "+
		filepath.Join(base, "ws")) {
		t.Errorf("ws/sub under a client root of ws/sub: %v", err)
	}
	own := filepath.Join(base, "ws/own")
	if got, err := ServedWorkspace(p, own, []string{own}); err != nil || got != own {
		t.Errorf("ws/own under a client root of ws/own: %q %v", got, err)
	}
}

// Outside the served roots the answer is the same, byte for byte, whether
// anything is there or not, and names only the folder as given.
func TestAnUnservedFolderIsNoOracle(t *testing.T) {
	base, p := servedWorld(t)
	refusal := func(given string) string {
		_, err := ServedWorkspace(p, given, nil)
		if code(err) != policy.WorkspaceNotAllowed {
			t.Fatalf("%s: %v", given, err)
		}
		return strings.Replace(err.Error(), given, "GIVEN", 1) // the message starts with it
	}
	want := refusal(filepath.Join(base, "nothing-here"))
	for _, rel := range []string{"other", "other/sub", "outside-secret/credential", "outside-secret/credential/x",
		"nothing-here/x", "ws/out", "ws/out/sub", "ws/out/missing", "ws/../other", "ws-alike"} {
		if got := refusal(filepath.Join(base, rel)); got != want {
			t.Errorf("%s:\n got %s\nwant %s", rel, got, want)
		}
		if _, err := ServedWorkspace(p, filepath.Join(base, rel), nil); strings.Contains(err.Error(), "secret") &&
			!strings.Contains(rel, "secret") {
			t.Errorf("%s: the refusal says more than was given: %v", rel, err)
		}
	}
	for _, root := range []string{"/", filepath.Dir(base)} {
		if got := refusal(root); got != want {
			t.Errorf("%s: %s", root, got)
		}
	}
	// Inside, what is wrong may be said.
	for rel, what := range map[string]string{"ws/missing": "does not exist", "ws/file": "must be a directory",
		"ws/file/x": "must be a directory"} {
		_, err := ServedWorkspace(p, filepath.Join(base, rel), nil)
		if code(err) != coded.ConfigInvalid || !strings.Contains(err.Error(), what) {
			t.Errorf("%s: %v, want %s", rel, err, what)
		}
	}
}

func code(err error) string {
	var ce *coded.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

// A relative folder is refused as one that must be absolute, before
// anything is looked at: resolved, it would be the server's working
// folder's (here a served workspace), never the client's.
func TestARelativeFolderMustBeAbsolute(t *testing.T) {
	base, p := servedWorld(t)
	t.Chdir(base)
	for _, given := range []string{"ws", "./ws/sub", "nothing-here", "."} {
		_, err := ServedWorkspace(p, given, nil)
		if code(err) != coded.ConfigInvalid || !strings.Contains(err.Error(), "workspace_root must be absolute") {
			t.Errorf("%q: %v", given, err)
		}
	}
}
