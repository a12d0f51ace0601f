package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The operator's allowed paths widen what a mount may share, but never to
// a writable share of a folder that holds the workspace.
func TestMountsAgainstAllowedPaths(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "proj")
	os.MkdirAll(filepath.Join(ws, ".git"), 0o755)
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	data := t.TempDir()
	load := func(mounts string, allowed ...string) (*Resolved, error) {
		os.WriteFile(filepath.Join(ws, FileName), []byte("[vm]\nmounts = "+mounts+"\n"), 0o644)
		return Load(Options{Backends: linked, Root: ws, Host: Host{OS: "linux", Arch: "amd64"}, AllowedPaths: allowed})
	}
	for _, c := range []struct {
		mounts  string
		allowed []string
		problem string
	}{
		{`["` + data + `:/data:rw"]`, nil, "outside the workspace"},
		{`["` + data + `:/data:rw", "src:/src:rw"]`, []string{data}, ""},
		{`["..:/up"]`, []string{home}, ""},
		{`["..:/up:rw"]`, []string{home}, "holds the workspace"},
		{`["` + home + `:/up:rw"]`, []string{home}, "holds the workspace"},
		{`[".:/w:ro"]`, nil, ""},
	} {
		_, err := load(c.mounts, c.allowed...)
		var errs Errors
		if c.problem == "" && err != nil || c.problem != "" && (!errors.As(err, &errs) ||
			!strings.Contains(err.Error(), c.problem)) {
			t.Errorf("%s allowed %v: %v", c.mounts, c.allowed, err)
		}
	}
	// A writable share of the workspace itself is the operator's choice,
	// but sbf says what it gives the guest.
	r, err := load(`[".:/w:rw"]`)
	if err != nil || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0].Message, ".git") {
		t.Errorf("writable workspace mount: %v %v", err, r.Warnings)
	}
	// The protected names are hostpath's, compared as it compares them: a
	// folder holding .GIT or an older config name is warned of too.
	for _, name := range []string{".GIT", ".orbitforge.toml"} {
		sub := filepath.Join(ws, "sub-"+strings.Trim(name, "."))
		os.MkdirAll(filepath.Join(sub, name), 0o755)
		r, err := load(`["` + sub + `:/w:rw"]`)
		if err != nil || len(r.Warnings) != 1 {
			t.Errorf("writable share of a folder holding %s: %v %v", name, err, r.Warnings)
		}
	}
}

func TestMountLocationIsAbsoluteAgainstTheWorkspace(t *testing.T) {
	for mount, want := range map[string]string{"src": "/ws/src", "src:/g:rw": "/ws/src", "/abs:/g": "/abs",
		"~/x": "~/x",
		".":   "/ws"} {
		if got, _ := MountLocation("/ws", mount); got != want {
			t.Errorf("%s: %s, want %s", mount, got, want)
		}
	}
	if _, rw := MountLocation("/ws", "src:/g:rw"); !rw {
		t.Error(":rw not writable")
	}
}
