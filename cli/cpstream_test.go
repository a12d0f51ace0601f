package cli

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `sbf cp NAME:PATH -` writes a tar archive of PATH to stdout and `sbf cp
// - NAME:DIR` unpacks one from stdin, as docker cp does; before, "-" was a
// host file of that name (issue 40). Neither is refused on a pipe; an
// archive goes into an existing folder only, and - needs a sandbox side.
func TestCpDashIsATarOnStdinOrStdout(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	tw.WriteHeader(&tar.Header{Name: "notes/a.txt", Mode: 0o644, Size: 5, Typeflag: tar.TypeReg})
	tw.Write([]byte("alpha"))
	tw.Close()
	if r := sbf(t, env, "exec", "api", "-C", dir, "--", "mkdir", "-p", "in"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := sbfWithStdin(t, env, bytes.NewReader(in.Bytes()), "cp", "-C", dir, "-", "api:in")
	if r.code != 0 || !strings.Contains(r.stderr, "unpacked the archive from stdin into api:in") {
		t.Fatalf("cp - api:in: exit %d\n%s", r.code, r.stderr)
	}
	if got := sbf(t, env, "cat", "-C", dir, "api:in/notes/a.txt"); got.stdout != "alpha" {
		t.Errorf("unpacked: %q %q", got.stdout, got.stderr)
	}
	r = sbf(t, env, "cp", "-C", dir, "api:in/notes", "-")
	if r.code != 0 {
		t.Fatalf("cp api:in/notes -: exit %d\n%s", r.code, r.stderr)
	}
	files := map[string]string{}
	tr := tar.NewReader(strings.NewReader(r.stdout))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stdout is no tar archive: %v (%d bytes)", err, len(r.stdout))
		}
		b, _ := io.ReadAll(tr)
		files[strings.TrimSuffix(h.Name, "/")] = string(b)
	}
	if files["notes/a.txt"] != "alpha" || len(files) != 2 {
		t.Errorf("the archive holds %v, want notes/ and notes/a.txt", files)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-", "api:nowhere"}, 1, "an archive on stdin is unpacked into an existing folder"},
		{[]string{"api:nothing-here", "-"}, 1, "nothing-here: no such file or folder"},
		{[]string{"-", "-"}, 2, "goes with a sandbox's side"},
		{[]string{"./x", "-"}, 2, "goes with a sandbox's side"},
	} {
		r := sbf(t, env, append([]string{"cp", "-C", dir}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("cp %v: exit %d (want %d)\n%q\n%s", c.args, r.code, c.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "-")); err == nil {
		t.Error("cp wrote a host file named -")
	}
}

// On a terminal, `sbf cp NAME:PATH -` refuses to write an archive there
// and `sbf cp - NAME:DIR` to read one from it, saying what to do; no file
// named - is made (what issue 40 found).
func TestCpDashOnATerminalRefuses(t *testing.T) {
	w := newSimWorkspace(t, simSpec)
	if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	code, out := onTerminal(t, w.cmd(nil, "cp", "api:.", "-"), noPrompt, "")
	if code != 1 || !strings.Contains(out, "not writing a tar archive to a terminal: pipe it (sbf cp api:. - | tar -x)") {
		t.Errorf("cp api:. - on a terminal: exit %d\n%s", code, out)
	}
	code, out = onTerminal(t, w.cmd(nil, "cp", "-", "api:."), noPrompt, "")
	if code != 1 || !strings.Contains(out, "stdin is a terminal: pipe one in (tar -c . | sbf cp - api:.)") {
		t.Errorf("cp - api:. on a terminal: exit %d\n%s", code, out)
	}
	for _, d := range []string{w.root, "."} {
		if _, err := os.Lstat(filepath.Join(d, "-")); err == nil {
			t.Errorf("a file named - in %s", d)
		}
	}
}

// An archive on stdout stops at the operator's [policy] max_copy_bytes,
// as a copy back to the host does: a guest folder cannot make sbf write
// more through a pipe or a redirect either.
func TestCpDashStopsAtTheCopyCeiling(t *testing.T) {
	dir := simDir(t, simSpec)
	write(t, filepath.Join(testHome(t), ".config", "sandboxforge", "config.toml"),
		"[policy]\nmax_copy_bytes = 20000\n")
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := sbf(t, env, "exec", "api", "-C", dir, "--", "sh", "-c", "head -c 100000 /dev/zero > big"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := sbf(t, env, "cp", "-C", dir, "api:big", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "more than 20000 bytes of archive") || len(r.stdout) > 20000 {
		t.Errorf("exit %d, %d bytes on stdout\n%s", r.code, len(r.stdout), r.stderr)
	}
}
