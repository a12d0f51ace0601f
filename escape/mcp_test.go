package escape

import (
	"os"
	"os/exec"
	"testing"
)

// Finding 1: a client named a folder the server does not serve (its spec
// said driver = "sim") and ran commands on the host; a client named "/" and
// sbf made /.sandboxforge. Now every workspace tool refuses such a folder
// with WORKSPACE_NOT_ALLOWED before any file is made, and a served folder
// naming the sim gets BACKEND_UNAVAILABLE unless the operator started sbf
// with SBF_ENABLE_SIM=1. Over HTTP the client also sends its token as
// "bearer …" (finding 6: the scheme is case-insensitive).
func TestToolArgumentsReachOnlyServedWorkspaces(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, "[vm]\ndriver = \"lima\"\n")
			w.write("ws/sub/.sandboxforge.toml", "[vm]\ndriver = \"sim\"\n")
			target, extra := sbfBinary, []string{}
			if mode == "http" {
				tok := "s3cret-token-of-the-escape-suite"
				target = w.serve(nil, "--token-file", w.tokenFile(tok)) // localhost: allowed
				extra = append(extra, "ESC_TOKEN="+tok)
			}
			w.attack("hostexec", mode, target, extra...)
			for _, made := range []string{"other/.sandboxforge", "ws/sub/.sandboxforge/state.json"} {
				if w.exists(made) {
					t.Errorf("%s was made", made)
				}
			}
		})
	}
}

// Findings 2, 4 and 5: the guest wrote sbf's configuration (the sim again,
// the host's root mounted), a git hook and an .envrc into the workspace,
// and links out of it; a copy of the workspace root lost its dotfiles.
// Now copies back refuse protected destinations, skip protected entries
// and links out (listing them), and root copies keep dotfiles. After the
// attack git's next commit runs no hook of the guest's.
func TestGuestOutputNeverBecomesHostControl(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
			w.write("ws/.dotfile", "kept\n")
			git(t, w.ws, "init", "-q")
			sim := []string{"SBF_ENABLE_SIM=1"} // the operator's: tests run the sim
			target := sbfBinary
			if mode == "http" {
				target = w.serve(sim)
			}
			w.attack("guestdata", mode, target, sim...)
			for _, p := range []string{"ws/.sandboxforge.local.toml", "ws/sub/.sandboxforge.toml", "ws/.envrc",
				"ws/.git/hooks/pre-commit", "ws/.env", "ws/abslink", "ws/back/.env"} {
				if w.exists(p) {
					t.Errorf("%s was written from the guest", p)
				}
			}
			git(t, w.ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "after")
			if r := w.sbf(sim, "-C", w.ws, "plan", "--json"); r.code != 0 || contains(r.stdout, "hostroot") {
				t.Errorf("plan after the attack: %d %s %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// The client's MCP roots narrow the operator's: a workspace outside them
// is refused, and a roots/list_changed notification takes effect.
func TestClientRootsNarrowTheServer(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
			w.write("ws/a/.sandboxforge.toml", "[vm]\ndriver = \"sim\"\n")
			sim := []string{"SBF_ENABLE_SIM=1"}
			target := sbfBinary
			if mode == "http" {
				target = w.serve(sim)
			}
			w.attack("roots", mode, target, sim...)
		})
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", append([]string{"-C", dir}, args...)...)
	c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
