package escape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 29, attacks 5, 6, 7 and 11: what a copy from a sandbox writes is
// data. Each test fails on 45f7204.

// Attack 5: guest links a -> ., c -> a/.., d -> c/../secret passed a lexical
// check and, copied back (copy_from_instance, or synced into "."), led out
// of the workspace: cat read the host's file. Links are now judged where the
// kernel will walk them, so c and d are left out.
func TestCopiesBackKeepLinkChainsInside(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
			w.writerAttack("chain", mode)
			w.readsNoCanary("ws")
		})
	}
	t.Run("cli", func(t *testing.T) {
		w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
		leave := []string{"SBF_ENABLE_SIM=1"}
		if r := w.sbf(leave, "-C", w.ws, "up", "--auto-approve", "--new", "a", "--ttl", "10m"); r.code != 0 {
			t.Fatalf("up: %s", r.stderr)
		}
		c := filepath.Base(w.canary)
		if r := w.sbf(leave, "-C", w.ws, "exec", "a", "--", "sh", "-c", "mkdir chain && cd chain && ln -s . a && "+
			"ln -s a/.. c && ln -s c/../"+c+"/secret d"); r.code != 0 {
			t.Fatalf("exec: %s", r.stderr)
		}
		r := w.sbf(leave, "-C", w.ws, "cp", "a:/chain", "back")
		if r.code != 0 || !contains(r.stderr, "back/c") || !contains(r.stderr, "back/d") || w.exists("ws/back/d") {
			t.Errorf("cp back: %d %s", r.code, r.stderr)
		}
		w.readsNoCanary("ws")
		w.sbf(leave, "-C", w.ws, "destroy", "--auto-approve")
	})
}

// Attack 6: on macOS and Windows, the hosts of the vz, Lima and Hyper-V
// drivers, .SANDBOXFORGE.local.toml, .GIT/hooks, .ENVRC, GIT~1, .git. and an
// NFD spelling of a protected NFC name are the protected files; they were
// written. Now names compare as those filesystems compare them.
func TestCopiesBackRefuseEverySpellingOfAProtectedName(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, "[vm]\ndriver = \"sim\"\n[sync]\nprotect = [\".envrc\", \"caf\u00e9.env\"]\n")
			w.writerAttack("case", mode)
			for _, p := range []string{".SANDBOXFORGE.local.toml", ".GIT", ".ENVRC", "GIT~1", ".git.", ".SandboxForge",
				"cafe\u0301.env", ".git::$INDEX_ALLOCATION"} {
				if w.exists("ws/" + p) {
					t.Errorf("%s was written from the guest", p)
				}
			}
		})
	}
}

// Attack 7 (issue 29): with the home folder allowed (--allow-path ~), the
// guest's file replaced ~/.config/sandboxforge/config.toml. Issue 39 point
// 2: a list of reserved names still let a guest write a .pth file under
// ~/.local/lib/python*/site-packages, a systemd user unit, ~/.vimrc,
// ~/.cargo/config.toml, ~/.aws/config, ~/.npmrc. Now the home folder, a
// folder above it and every folder of configuration cannot be allowed at
// all, and in a data folder allowed besides the workspace no hidden file
// or folder is ever made from the guest.
func TestCopiesBackNeverRewriteTheOperatorsHome(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
			w.homeOfAPerson()
			w.write("home/data/keep", "mine\n")
			w.writerAttack("home", mode, "ESC_HOME="+filepath.Join(w.base, "home", "data"))
			w.homeUntouched()
			for _, p := range []string{"home/data/.npmrc", "home/data/.aws", "home/data/.local", "home/data/.bashrc"} {
				if w.exists(p) {
					t.Errorf("%s was written from the guest", p)
				}
			}
		})
	}
	t.Run("home not allowable", func(t *testing.T) {
		w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
		w.homeOfAPerson()
		home := filepath.Join(w.base, "home")
		w.write("home/.local/lib/python3.11/site-packages/keep", "")
		leave := []string{"SBF_ENABLE_SIM=1"}
		if r := w.sbf(leave, "-C", w.ws, "up", "--auto-approve", "--new", "a", "--ttl", "10m"); r.code != 0 {
			t.Fatalf("up: %s", r.stderr)
		}
		defer w.sbf(leave, "-C", w.ws, "destroy", "--auto-approve")
		for _, allowed := range []string{home, w.base, "/", filepath.Join(home, ".config"),
			filepath.Join(home, ".local/lib/python3.11/site-packages"), filepath.Join(home, ".local")} {
			r := w.sbf(leave, "-C", w.ws, "cp", "--allow-path", allowed, "a:/etc", filepath.Join(allowed, "x"))
			if r.code == 0 || !contains(r.stderr, "allow a folder of data instead") {
				t.Errorf("cp --allow-path %s: %d %s", allowed, r.code, r.stderr)
			}
			for _, args := range [][]string{{"mcp"}, {"serve", "127.0.0.1:0"}} {
				r := w.sbf(leave, append(append([]string{"-C", w.ws}, args...), "--allow-path", allowed)...)
				if r.code == 0 || !contains(r.stderr, "allow a folder of data instead") {
					t.Errorf("%s --allow-path %s: %d %s", args[0], allowed, r.code, r.stderr)
				}
			}
		}
		for _, args := range [][]string{{"-C", home, "mcp"}, {"mcp", "--workspace-root", w.base}} {
			if r := w.sbf(leave, args...); r.code == 0 || !contains(r.stderr, "home folder") {
				t.Errorf("%v: %d %s", args, r.code, r.stderr)
			}
		}
		w.homeUntouched()
	})
}

// Attack 11 (part): a plugin was found on a PATH entry inside the served
// workspace, where a copy from a sandbox can put an executable; sbf doctor
// ran it. Issue 39: one inside another workspace (served by another sbf,
// or by none now) was still run. Now such an entry is passed over, and
// doctor says so.
func TestPluginsAreNotRunFromTheWorkspace(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"ws", "other", "other/deep/er"} {
		t.Run(where, func(t *testing.T) {
			w := newWorld(t, "[vm]\ndriver = \"kubevirt\"\n")
			plugin := filepath.Join(w.base, where, "bin", "sbf-kubevirt")
			w.write(filepath.Join(where, "bin", "sbf-kubevirt"), "#!/bin/sh\ntouch "+w.canary+"/pwned-by-plugin\n")
			if err := os.Chmod(plugin, 0o755); err != nil {
				t.Fatal(err)
			}
			path := "PATH=" + filepath.Dir(plugin) + string(os.PathListSeparator) + os.Getenv("PATH")
			r := w.sbf([]string{path}, "-C", w.ws, "doctor")
			if !contains(r.stdout+r.stderr, "passed over "+plugin) {
				t.Errorf("doctor does not say it passed over %s: %d\n%s\n%s", plugin, r.code, r.stdout, r.stderr)
			}
		})
	}
}

// homeOfAPerson gives the world's HOME what a person's holds.
func (w *world) homeOfAPerson() {
	w.write("home/.config/sandboxforge/config.toml", "# the operator's\n")
	w.write("home/.bashrc", "# mine\n")
	w.write("home/.ssh/config", "# mine\n")
}

func (w *world) homeUntouched() {
	w.t.Helper()
	for rel, want := range map[string]string{"home/.config/sandboxforge/config.toml": "# the operator's\n",
		"home/.bashrc": "# mine\n", "home/.ssh/config": "# mine\n"} {
		if b, err := os.ReadFile(filepath.Join(w.base, rel)); err != nil || string(b) != want {
			w.t.Errorf("%s = %q %v", rel, b, err)
		}
	}
	for _, p := range []string{"home/.ssh/authorized_keys", "home/.zshrc", "home/.config/orbitforge-mcp",
		"home/.lima", "home/.local/state/sandboxforge"} {
		if w.exists(p) {
			w.t.Errorf("%s was written from the guest", p)
		}
	}
}

// readsNoCanary fails when any path below rel (links followed) reads the
// canary's secret.
func (w *world) readsNoCanary(rel string) {
	w.t.Helper()
	filepath.Walk(filepath.Join(w.base, rel), func(p string, _ os.FileInfo, err error) error {
		if b, rerr := os.ReadFile(p); err == nil && rerr == nil && strings.Contains(string(b), "hunter2") {
			w.t.Errorf("%s reads the canary's secret", p)
		}
		return nil
	})
}

// writerAttack runs one phase of writer.mjs with the official TypeScript SDK
// against the sim (the guest is a host folder, so a command in the sandbox
// plays the guest), over stdio or a served HTTP endpoint with a token.
func (w *world) writerAttack(phase, mode string, extra ...string) {
	w.t.Helper()
	sim := []string{"SBF_ENABLE_SIM=1"}
	target := sbfBinary
	if mode == "http" {
		const tok = "writer-token-of-the-escape-suite"
		var args []string
		for _, e := range extra {
			if home, ok := strings.CutPrefix(e, "ESC_HOME="); ok {
				args = append(args, "--allow-path", home)
			}
		}
		target = w.serve(sim, append(args, "--token-file", w.tokenFile(tok))...)
		extra = append(extra, "ESC_TOKEN="+tok)
	}
	c := tsNode(w.t, "writer.mjs")
	c.Env = append(append(append([]string{}, w.env...), sim...), append(extra, "ESC_PHASE="+phase,
		"ESC_MODE="+mode, "ESC_TARGET="+target, "ESC_WS="+w.ws, "ESC_CANARY="+w.canary)...)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		w.t.Fatalf("writer.mjs %s over %s: %v\n%s", phase, mode, err, out)
	}
}
