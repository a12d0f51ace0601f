package escape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers/sim"
)

// Finding 1 at the CLI: no file makes the sim run; only the operator's
// SBF_ENABLE_SIM=1 does. A workspace's [policy] cannot widen anything,
// and the global config cannot enable the sim either.
func TestSimRunsOnlyWithTheOperatorsLeave(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	r := w.sbf(nil, "-C", w.ws, "up", "--auto-approve", "--new", "box", "--ttl", "10m")
	if r.code == 0 || !contains(r.stderr, "SBF_ENABLE_SIM=1") {
		t.Errorf("up without the operator's leave: %d\n%s", r.code, r.stderr)
	}
	if w.exists("ws/.sandboxforge/state.json") {
		t.Error("a refused run wrote state")
	}
	w.write("ws/.sandboxforge.local.toml", "[policy]\nallowed_paths = [\"/\"]\n")
	if r := w.sbf(nil, "-C", w.ws, "validate"); r.code == 0 || !contains(r.stdout+r.stderr, "operator's to set") {
		t.Errorf("a workspace [policy]: %d %s %s", r.code, r.stdout, r.stderr)
	}
	os.Remove(filepath.Join(w.ws, ".sandboxforge.local.toml"))
	w.write("home/.config/sandboxforge/config.toml", "[policy]\nenable_sim = true\n")
	if r := w.sbf(nil, "-C", w.ws, "up", "--auto-approve", "box"); r.code == 0 || !contains(r.stderr, "SBF_ENABLE_SIM=1") {
		t.Errorf("a global config enabling the sim: %d %s", r.code, r.stderr)
	}
}

// Finding 3: connection variables written outside the workspace
// (inject_env_to = "../escaped.env" or an absolute path) and a host mount
// of / are configuration errors, with positions.
func TestWorkspaceAsksNothingOutsideIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\nmounts = [\"/:/hostroot:rw\"]\n"+
		"[infra.mysql]\ninject_env_to = \"../escaped.env\"\n[infra.redis]\ninject_env_to = \""+w0(t)+"\"\n")
	r := w.sbf(nil, "-C", w.ws, "validate")
	out := r.stdout + r.stderr
	for _, want := range []string{".sandboxforge.toml:3:11: vm.mounts[0]: shares /", ":5:17: infra.mysql.inject_env_to",
		":7:17: infra.redis.inject_env_to: must name a file inside the workspace"} {
		if r.code != 1 || !contains(out, want) {
			t.Errorf("validate: missing %q in %d\n%s", want, r.code, out)
		}
	}
	// Allowing / is refused outright: it holds the home folder (issue 39).
	r = w.sbf([]string{"SBF_ALLOWED_PATHS=/"}, "-C", w.ws, "validate")
	if r.code != 1 || !contains(r.stdout+r.stderr, "allowed path / holds the home folder") {
		t.Errorf("validate with / allowed: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if w.exists("escaped.env") {
		t.Error("an env file was written outside the workspace")
	}
}

func w0(t *testing.T) string { return filepath.Join(t.TempDir(), "abs.env") }

// Findings 4 and 5 at the CLI: sbf cp . keeps the root's dotfiles and
// ends (the sim's world is outside the workspace), sync of "." works, and
// a copy back skips links out, saying so.
func TestCLICopiesKeepDotfilesAndSkipLinksOut(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	w.write("ws/.dotfile", "kept\n")
	w.write("ws/data/.hidden", "kept too\n")
	leave := []string{"SBF_ENABLE_SIM=1"}
	if r := w.sbf(leave, "-C", w.ws, "up", "--auto-approve", "--new", "a", "--ttl", "10m"); r.code != 0 {
		t.Fatalf("up: %s", r.stderr)
	}
	if r := w.sbf(leave, "-C", w.ws, "cp", ".", "a:/r"); r.code != 0 {
		t.Fatalf("cp .: %s", r.stderr)
	}
	if r := w.sbf(leave, "-C", w.ws, "sync", "a", ".", "/s"); r.code != 0 {
		t.Fatalf("sync .: %s", r.stderr)
	}
	guest := filepath.Join(sim.WorldDir(w.state, w.ws), "guests", "sbf-"+tagOf(t, w)+"-a")
	for _, p := range []string{"r/.dotfile", "r/data/.hidden", "s/.dotfile", "s/data/.hidden"} {
		if _, err := os.Stat(filepath.Join(guest, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(guest, "r", "dotfile")); err == nil {
		t.Error("cp . dropped a leading dot")
	}
	r := w.sbf(leave, "-C", w.ws, "exec", "a", "--", "sh", "-c",
		"mkdir -p evil && ln -s "+w.canary+"/secret evil/out && echo hi > evil/in.txt")
	if r.code != 0 {
		t.Fatalf("exec: %s", r.stderr)
	}
	r = w.sbf(leave, "-C", w.ws, "cp", "a:/evil", filepath.Join(w.ws, "back"))
	if r.code != 0 || !contains(r.stderr, "skipped the link back/out") || w.exists("ws/back/out") ||
		!w.exists("ws/back/in.txt") {
		t.Errorf("cp back: %d %s", r.code, r.stderr)
	}
	w.sbf(leave, "-C", w.ws, "destroy", "--auto-approve")
}

// tagOf is the workspace's part of its instances' names.
func tagOf(t *testing.T, w *world) string {
	entries, err := os.ReadDir(filepath.Join(sim.WorldDir(w.state, w.ws), "guests"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("guests: %v %v", entries, err)
	}
	name := entries[0].Name()
	return strings.TrimSuffix(strings.TrimPrefix(name, "sbf-"), "-a")
}

// Finding 6: an error quotes at most ~200 bytes of any input; a 65 KB key
// no longer comes back whole.
func TestErrorsQuoteBoundedInput(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\n"+strings.Repeat("k", 65<<10)+" = 1\n")
	r := w.sbf(nil, "-C", w.ws, "validate")
	if r.code != 1 || len(r.stdout)+len(r.stderr) > 4<<10 || !contains(r.stdout+r.stderr, "kkk… (66563 bytes)") {
		t.Errorf("validate: exit %d, %d bytes of output:\n%.600s", r.code, len(r.stdout)+len(r.stderr),
			r.stdout+r.stderr)
	}
}
