package escape

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 29, attack 1: docker_build and validate_image read the build
// cache's git state with `git status` on the host. A guest synced back a
// folder holding HEAD, config, objects/ and refs/ (under any name, or onto
// the root of a workspace without .git) whose config set core.worktree = .
// and core.fsmonitor to a command; the next docker_build, or
// validate_image with that folder as workspace_root, ran the command as
// sbf's user. The same went for a workspace .git/config that names one.
// Now the state is read by a pure-Go reader that runs nothing and opens
// only the workspace's own .git folder.
func TestGitStateRunsNothingTheGuestWrote(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the attack needs it to have something to run")
	}
	for _, plant := range []string{"root", "dotgit"} {
		t.Run(plant, func(t *testing.T) {
			w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
			marker := filepath.Join(w.canary, "pwned-by-git")
			if plant == "dotgit" {
				git(t, w.ws, "init", "-q")
				git(t, w.ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one")
				git(t, w.ws, "config", "core.fsmonitor", "touch "+marker+"; echo")
				git(t, w.ws, "config", "core.hooksPath", filepath.Join(w.base, "hooks"))
			}
			env := []string{"SBF_ENABLE_SIM=1", "PATH=" + fakeDocker(t, w) + string(os.PathListSeparator) + os.Getenv("PATH")}
			w.gitAttack(sbfBinary, plant, marker, env...)
			if w.exists("canary/pwned-by-git") {
				t.Error("the planted command ran on the host")
			}
		})
	}
}

// fakeDocker is the sim guest's docker (the sim's guest is this host,
// which has none): ready, no image, builds and tags succeed. It runs
// only what sbf asks of the guest's docker, never the workspace's git.
func fakeDocker(t *testing.T, w *world) string {
	w.write("fakebin/docker", `#!/bin/sh
case "$1" in
version) echo 27.0.0 ;;
compose) echo 2.29.0 ;;
image) echo "Error response from daemon: No such image: $6" >&2; exit 1 ;;
esac
exit 0
`)
	if err := os.Chmod(filepath.Join(w.base, "fakebin", "docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(w.base, "fakebin")
}

// gitAttack runs gitstate.mjs with the official TypeScript SDK.
func (w *world) gitAttack(target, plant, marker string, extra ...string) {
	w.t.Helper()
	c := tsNode(w.t, "gitstate.mjs")
	c.Env = append(append([]string{}, w.env...), append(extra, "ESC_MODE=stdio", "ESC_TARGET="+target,
		"ESC_WS="+w.ws, "ESC_MARKER="+marker, "ESC_PLANT="+plant)...)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		w.t.Fatalf("gitstate.mjs (%s): %v\n%s", plant, err, out)
	}
}
