package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestSplitRemoteSandboxNamesBeatDriveLetters(t *testing.T) {
	declared := func(n string) bool { return n == "a" }
	for _, tc := range []struct {
		arg      string
		windows  bool
		box, pth string
	}{
		{"a:/x", false, "a", "/x"},
		{"a:/x", true, "a", "/x"},   // declared: the sandbox wins
		{"c:/x", true, "", "c:/x"},  // undeclared on Windows: a drive
		{"c:/x", false, "c", "/x"},  // no drives elsewhere
		{`c:\x`, false, "", `c:\x`}, // clearly Windows-absolute
		{`a:\x`, true, "", `a:\x`},  // even when a sandbox is called a
		{"api:/work", false, "api", "/work"},
		{"./a:b", false, "", "./a:b"},
		{"plain", false, "", "plain"},
	} {
		box, p := splitRemote(tc.arg, declared, tc.windows)
		if box != tc.box || p != tc.pth {
			t.Errorf("splitRemote(%q, windows=%v) = %q %q, want %q %q", tc.arg, tc.windows, box, p, tc.box, tc.pth)
		}
	}
}

// `sbf cp src a:/x` names sandbox a; before, any one-letter sandbox was
// read as a drive letter and the command refused both sides as local.
func TestCopyToOneLetterSandbox(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "[vm]\ndriver = \"sim\"\n[sandboxes.a]\n")
	write(t, filepath.Join(dir, "src"), "x")
	r := sbf(t, map[string]string{"SBF_STATE_HOME": filepath.Join(dir, "host")}, "cp", "-C", dir, filepath.Join(dir,
		"src"), "a:/x")
	if strings.Contains(r.stderr, "exactly one of SRC and DST") || !strings.Contains(r.stderr, "sandbox a ") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

// cp and sync read and write only inside the workspace (and the folders
// --allow-path adds); sync sends only what changed.
func TestCopyAndSyncStayInTheWorkspace(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret"), "s")
	write(t, filepath.Join(dir, "app", "a.txt"), "a")
	if r := sbf(t, env, "cp", "-C", dir, filepath.Join(outside, "secret"), "api:/x"); r.code != 1 ||
		!strings.Contains(r.stderr, "outside the folders") {
		t.Errorf("cp from outside: exit %d %q", r.code, r.stderr)
	}
	if r := sbf(t, env, "cp", "-C", dir, "--allow-path", outside, filepath.Join(outside, "secret"),
		"api:/x"); r.code != 0 {
		t.Errorf("cp with --allow-path: exit %d %q", r.code, r.stderr)
	}
	first := sbf(t, env, "sync", "-C", dir, "api", filepath.Join(dir, "app"), "/work/app")
	again := sbf(t, env, "sync", "-C", dir, "api", filepath.Join(dir, "app"), "/work/app")
	if !strings.Contains(first.stdout, "1 sent") || !strings.Contains(again.stdout, "0 sent, 1 unchanged") {
		t.Errorf("sync: %q then %q (%s)", first.stdout, again.stdout, again.stderr)
	}
	if r := sbf(t, env, "sync", "-C", dir, "--from", "api", filepath.Join(outside, "back"), "/work/app"); r.code != 1 {
		t.Errorf("sync --from to outside: exit %d", r.code)
	}
}
