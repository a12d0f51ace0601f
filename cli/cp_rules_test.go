package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sbf cp follows docker cp's rules (docs/cp.md) in both directions: each
// case copies into a fresh guest (or host) folder and lists what is there.
func TestCopyFollowsDockerCp(t *testing.T) {
	t.Parallel()
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	tree := filepath.Join(dir, "tree")
	write(t, filepath.Join(tree, "src", "a.txt"), "a")
	write(t, filepath.Join(tree, "src", "sub", "b.txt"), "b")
	write(t, filepath.Join(tree, "f.txt"), "f")
	run := func(args ...string) result {
		t.Helper()
		return sbf(t, env, append([]string{"-C", dir}, args...)...)
	}
	// makeTree makes the entries under root (a trailing / makes a folder).
	makeTree := func(root string, entries []string) {
		os.MkdirAll(root, 0o755)
		for _, p := range entries {
			if strings.HasSuffix(p, "/") {
				os.MkdirAll(filepath.Join(root, p), 0o755)
			} else {
				write(t, filepath.Join(root, p), "old")
			}
		}
	}
	n := 0
	for _, tc := range []struct {
		name     string
		prepare  []string // paths in the destination's folder made first: a trailing / makes a folder
		src, dst string   // src relative to the tree, dst to the case's folder
		want     []string // the case's folder after the copy (ls -R)
		err      string
	}{
		{"file to missing", nil, "f.txt", "new.txt", []string{"new.txt"}, ""},
		{"file to existing file", []string{"f.txt"}, "f.txt", "f.txt", []string{"f.txt"}, ""},
		{"file to folder", []string{"d/"}, "f.txt", "d", []string{"d/", "d/f.txt"}, ""},
		{"file to folder/", []string{"d/"}, "f.txt", "d/", []string{"d/", "d/f.txt"}, ""},
		{"file to missing folder/", nil, "f.txt", "newdir/", nil, "the folder"},
		{"file into a missing parent", nil, "f.txt", "no/such/x", nil, "does not exist"},
		{"file as a folder", nil, "f.txt/", "x", nil, "is not a folder"},
		{"folder to missing", nil, "src", "d2", []string{"d2/", "d2/a.txt", "d2/sub/", "d2/sub/b.txt"}, ""},
		{"folder to folder", []string{"d2/"}, "src", "d2",
			[]string{"d2/", "d2/src/", "d2/src/a.txt", "d2/src/sub/", "d2/src/sub/b.txt"}, ""},
		{"folder/ to folder", []string{"d2/"}, "src/", "d2",
			[]string{"d2/", "d2/src/", "d2/src/a.txt", "d2/src/sub/", "d2/src/sub/b.txt"}, ""},
		{"folder/. to folder", []string{"d2/", "d2/old"}, "src/.", "d2",
			[]string{"d2/", "d2/a.txt", "d2/old", "d2/sub/", "d2/sub/b.txt"}, ""},
		{"folder to file", []string{"d2"}, "src", "d2", nil, "cannot copy the folder"},
		{"folder over a file inside", []string{"d2/", "d2/src"}, "src", "d2", nil, "cannot overwrite the file"},
		{"file over a folder inside", []string{"d2/", "d2/f.txt/"}, "f.txt", "d2", nil, "cannot overwrite the folder"},
		{"missing source", nil, "nothing", "x", nil, "no such file or folder"},
	} {
		for _, dirn := range []string{"in", "out"} {
			n++
			t.Run(dirn+"/"+tc.name, func(t *testing.T) {
				// In: the case's folder is a guest one, made by copying a host
				// folder; out: a host one, and the tree is copied into the guest.
				caseName := "case" + strconv.Itoa(n)
				hostCase := filepath.Join(dir, "out", caseName)
				var r result
				if dirn == "in" {
					makeTree(filepath.Join(dir, "prep", caseName), tc.prepare)
					if r := run("cp", filepath.Join(dir, "prep", caseName), "api:/"+caseName); r.code != 0 {
						t.Fatal(r.stderr)
					}
					r = run("cp", filepath.Join(tree, tc.src)+trailer(tc.src), "api:/"+caseName+"/"+tc.dst)
				} else {
					makeTree(hostCase, tc.prepare)
					if r := run("cp", tree, "api:/tree"+strconv.Itoa(n)); r.code != 0 {
						t.Fatal(r.stderr)
					}
					r = run("cp", "api:/tree"+strconv.Itoa(n)+"/"+tc.src, filepath.Join(hostCase, tc.dst)+trailer(tc.dst))
				}
				if tc.err != "" {
					if r.code == 0 || !strings.Contains(r.stderr, tc.err) || strings.Contains(r.stderr, "mkdirat") {
						t.Errorf("exit %d, want an error with %q:\n%s", r.code, tc.err, r.stderr)
					}
					return
				}
				if r.code != 0 || !strings.HasPrefix(r.stderr, "copied ") {
					t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
				}
				var got []string
				if dirn == "in" {
					got = strings.Fields(run("ls", "-R", "api:/"+caseName).stdout)
				} else {
					got = hostTree(t, hostCase)
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("after cp %s %s: %q, want %q (%s)", tc.src, tc.dst, got, tc.want, r.stderr)
				}
			})
		}
	}
}

// trailer keeps what filepath.Join drops: the / or /. the case ends in.
func trailer(p string) string {
	switch {
	case strings.HasSuffix(p, "/."):
		return "/."
	case strings.HasSuffix(p, "/"):
		return "/"
	}
	return ""
}

func hostTree(t *testing.T, root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if p == root || err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	return out
}

// `sbf cp src api:` copies into the guest's home under src's own name, and
// `sbf ls api:` lists that home, the path cp accepted.
func TestCopyToHomeAndListIt(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	write(t, filepath.Join(dir, "src", "a.txt"), "a")
	r := sbf(t, env, "-C", dir, "cp", filepath.Join(dir, "src"), "api:")
	if r.code != 0 || r.stderr != "copied "+filepath.Join(dir, "src")+" to api:src\n" {
		t.Fatalf("cp to api: exit %d %q", r.code, r.stderr)
	}
	r = sbf(t, env, "-C", dir, "ls", "api:")
	if r.code != 0 || !slices.Contains(strings.Fields(r.stdout), "src/") || strings.Contains(r.stdout, "a.txt") {
		t.Errorf("ls api: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
}

// sync takes cp's word order too: LOCAL NAME:REMOTE sends, NAME:REMOTE
// LOCAL brings back (as --from).
func TestSyncInCpOrder(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	write(t, filepath.Join(dir, "app", "a.txt"), "a")
	r := sbf(t, env, "-C", dir, "sync", filepath.Join(dir, "app"), "api:/work/app")
	if r.code != 0 || !strings.Contains(r.stdout, "1 sent") {
		t.Fatalf("sync LOCAL NAME:REMOTE: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = sbf(t, env, "-C", dir, "sync", "api:/work/app", filepath.Join(dir, "back"))
	if b, err := os.ReadFile(filepath.Join(dir, "back", "a.txt")); r.code != 0 || err != nil || string(b) != "a" {
		t.Errorf("sync NAME:REMOTE LOCAL: exit %d %s %v", r.code, r.stderr, err)
	}
	for _, args := range [][]string{{"sync", "a", "b"}, {"sync", "api:/x", "api:/y"}, {"sync", "--from", "x", "api:/y"}} {
		if r := sbf(t, env, append([]string{"-C", dir}, args...)...); r.code != 2 {
			t.Errorf("sbf %s: exit %d, want 2\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}
