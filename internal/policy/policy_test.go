package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadAddsUpSourcesAndOnlyTheEnvironmentEnablesTheSim(t *testing.T) {
	a, b, c, d := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	p, err := Load(Sources{Getenv: env(map[string]string{"SBF_WORKSPACE_ROOTS": b, "SBF_ALLOWED_PATHS": c}),
		Global: &Global{AllowedPaths: []string{d}}, WorkspaceRoots: []string{a, a}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.WorkspaceRoots) != 2 || p.WorkspaceRoots[0] != a || p.WorkspaceRoots[1] != b {
		t.Errorf("roots = %v", p.WorkspaceRoots)
	}
	if len(p.AllowedPaths) != 2 || p.AllowedPaths[0] != c || p.AllowedPaths[1] != d || p.HostExec {
		t.Errorf("policy = %+v", p)
	}
	if p, _ := Load(Sources{Getenv: env(map[string]string{EnableSimVar: "1"})}); !p.HostExec {
		t.Error("SBF_ENABLE_SIM=1 did not enable the sim")
	}
	if _, err := Load(Sources{WorkspaceRoots: []string{filepath.Join(a, "missing")}}); err == nil {
		t.Error("a root that does not exist was accepted")
	}
}

func TestWorkspaceIsWithinOperatorAndClientRoots(t *testing.T) {
	p := Policy{WorkspaceRoots: []string{"/srv/ws"}}
	for root, ok := range map[string]bool{"/srv/ws": true, "/srv/ws/a/b": true, "/srv/wsx": false, "/srv": false,
		"/": false} {
		err := p.Workspace(root, nil)
		var ce *coded.Error
		if ok != (err == nil) || !ok && (!errors.As(err, &ce) || ce.Code != WorkspaceNotAllowed) {
			t.Errorf("%s: %v", root, err)
		}
	}
	if err := p.Workspace("/srv/ws/a", []string{"/srv/ws/b"}); err == nil {
		t.Error("a folder outside the client's roots was allowed")
	}
	if err := p.Workspace("/srv/ws/b/c", []string{"/srv/ws/b"}); err != nil {
		t.Errorf("inside both: %v", err)
	}
	if err := p.Workspace("/srv/ws", []string{}); err == nil {
		t.Error("a client that declared no roots at all was given one")
	}
	if err := (Policy{}).Workspace("/anything", nil); err != nil {
		t.Errorf("no operator roots (the CLI): %v", err)
	}
}

func TestReadGlobal(t *testing.T) {
	home := t.TempDir()
	write := func(text string) {
		os.MkdirAll(filepath.Join(home, "sandboxforge"), 0o755)
		os.WriteFile(filepath.Join(home, GlobalFile), []byte(text), 0o644)
	}
	if g, err := ReadGlobal(home); g != nil || err != nil {
		t.Errorf("no file: %v %v", g, err)
	}
	write("[vm]\ncpus = 2\n[policy]\nallowed_paths = [\"/data\"]\nworkspace_roots = [\"/src\"]\n")
	g, err := ReadGlobal(home)
	if err != nil || len(g.AllowedPaths) != 1 || g.WorkspaceRoots[0] != "/src" {
		t.Errorf("%+v %v", g, err)
	}
	write("[policy]\nenable_sim = true\n")
	if _, err := ReadGlobal(home); err == nil || !strings.Contains(err.Error(), EnableSimVar) {
		t.Errorf("a file enabling the sim: %v", err)
	}
	write("[policy]\nallowed_paths = \"/data\"\n")
	if _, err := ReadGlobal(home); err == nil {
		t.Error("a string instead of a list was accepted")
	}
}

// guest_host_ports is the operator's list of host ports a guest may reach;
// none unless the global config names them.
func TestGuestHostPorts(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "sandboxforge"), 0o755)
	path := filepath.Join(home, GlobalFile)
	if p, err := Load(Sources{}); err != nil || p.GuestHostPorts != nil {
		t.Errorf("default: %v %v", p.GuestHostPorts, err)
	}
	os.WriteFile(path, []byte("[policy]\nguest_host_ports = [5432, 8080]\n"), 0o644)
	g, err := ReadGlobal(home)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := Load(Sources{Global: g}); err != nil || !slices.Equal(p.GuestHostPorts, []int{5432, 8080}) {
		t.Errorf("ports: %v %v", p.GuestHostPorts, err)
	}
	for _, bad := range []string{"[0]", "[65536]", `["8080"]`, "8080"} {
		os.WriteFile(path, []byte("[policy]\nguest_host_ports = "+bad+"\n"), 0o644)
		if _, err := ReadGlobal(home); err == nil || !strings.Contains(err.Error(), "guest_host_ports") {
			t.Errorf("guest_host_ports = %s: %v", bad, err)
		}
	}
}
