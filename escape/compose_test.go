package escape

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// operatorToken is a secret in sbf's environment, as an operator's API
// token would be.
const operatorToken = "SBF_ESCAPE_OPERATOR_TOKEN=op-7f3c-not-for-guests"

// hostSecret is a host file outside the workspace the attacks name; each
// runs with it there and again without it.
const hostSecret = "HOST_TOKEN=hunter3"

// Issue 29, attack 2: compose.yaml, the files it includes and .env are
// the guest's to write (copy-back, sync), and sbf loaded them on the host
// with compose-go, which read paths no check saw: label_file:
// /proc/self/environ put sbf's environment into the compose file sbf
// ships; a label_file, an include's env_file, a configs file through a
// link and an env_file through ../ read host files; a missing path failed
// differently from one that exists (an existence oracle over MCP plan).
// Now each is refused before anything is read, with the file, line,
// column and key, the same words whether the host file exists or not,
// over the CLI (plan) and MCP (validate_workspace_config, plan, apply,
// prepare_workspace), and neither the file's content nor sbf's secret
// reaches any output or file sbf writes.
func TestComposeFilesReadNothingOutsideTheWorkspace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, compose string
		link          string // ws/cfg -> this, when set
		want          string // file:line:col: key
		oracle        bool   // the host file's presence must not show
	}{
		{name: "label_file /proc/self/environ",
			compose: "services:\n  web:\n    image: nginx\n    label_file: /proc/self/environ\n",
			want:    "compose.yaml:4:17: services.web.label_file"},
		{name: "label_file of a host file",
			compose: "services:\n  web:\n    image: nginx\n    label_file: SECRET\n",
			want:    "compose.yaml:4:17: services.web.label_file", oracle: true},
		{name: "include's env_file",
			compose: "include:\n  - path: x.yaml\n    env_file: SECRET\nservices:\n  web:\n    image: nginx\n",
			want:    "compose.yaml:3:15: include[0].env_file", oracle: true},
		{name: "configs file through a link",
			compose: "services:\n  web:\n    image: nginx\n    configs: [c]\nconfigs:\n  c:\n    file: ./cfg\n",
			link:    "../host/secret", want: "compose.yaml:7:11: configs.c.file", oracle: true},
		{name: "env_file through ..",
			compose: "services:\n  web:\n    image: nginx\n    env_file: ../host/secret\n",
			want:    "compose.yaml:4:15: services.web.env_file", oracle: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, instance := composeWorld(t)
			secret := filepath.Join(w.base, "host", "secret")
			w.write("ws/compose.yaml", strings.ReplaceAll(tc.compose, "SECRET", secret))
			if tc.link != "" {
				if err := os.Symlink(tc.link, filepath.Join(w.ws, "cfg")); err != nil {
					t.Fatal(err)
				}
			}
			there := w.refusals(instance, tc.want)
			if !tc.oracle {
				return
			}
			if err := os.Remove(secret); err != nil {
				t.Fatal(err)
			}
			if gone := w.refusals(instance, tc.want); gone != there {
				t.Errorf("the answers tell whether %s exists:\nthere: %s\ngone:  %s", secret, there, gone)
			}
		})
	}
}

var instanceName = regexp.MustCompile(`sbf-[0-9a-f]+-app`)

// composeWorld is a workspace whose sandbox holds a lease on the sim, and
// then (the operator's committed change) converges the compose stack.
func composeWorld(t *testing.T) (w *world, instance string) {
	w = newWorld(t, "[vm]\ndriver = \"sim\"\n[sandboxes.app]\n")
	w.write("host/secret", hostSecret+"\n")
	w.write("ws/x.yaml", "services:\n  x:\n    image: \"nginx:${HOST_TOKEN:-none}\"\n")
	w.env = append(w.env, "SBF_ENABLE_SIM=1", operatorToken)
	if r := w.sbf(nil, "-C", w.ws, "up", "--auto-approve", "--new", "app", "--ttl", "30m"); r.code != 0 {
		t.Fatalf("up: %s", r.stderr)
	}
	r := w.sbf(nil, "-C", w.ws, "status")
	if instance = instanceName.FindString(r.stdout); instance == "" {
		t.Fatalf("status names no instance: %s", r.stdout)
	}
	t.Cleanup(func() { w.sbf(nil, "-C", w.ws, "destroy", "--auto-approve") })
	w.write("ws/.sandboxforge.toml", "[vm]\ndriver = \"sim\"\n[sandboxes.app]\ncompose = true\n")
	return w, instance
}

// refusals makes the attack over the CLI and MCP, checks that each door
// refuses it naming want and that nothing tells the host file's content
// or sbf's secret, and returns what the doors said.
func (w *world) refusals(instance, want string) string {
	w.t.Helper()
	r := w.sbf(nil, "-C", w.ws, "plan")
	if r.code == 0 || !contains(r.stderr, filepath.Join(w.ws, want)+": names a file outside the workspace") {
		w.t.Errorf("sbf plan: exit %d, want a refusal naming %s:\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr + w.composeOverMCP(instance, want)
	w.tellsNothing(out)
	return out
}

// composeOverMCP runs compose.mjs against `sbf mcp` over stdio.
func (w *world) composeOverMCP(instance, want string) string {
	w.t.Helper()
	c := tsNode(w.t, "compose.mjs")
	c.Env = append(append([]string{}, w.env...), "ESC_TARGET="+sbfBinary, "ESC_WS="+w.ws, "ESC_WANT="+want,
		"ESC_INSTANCE="+instance)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		w.t.Errorf("compose.mjs: %v\n%s", err, out)
	}
	return string(out)
}

// tellsNothing fails the test when the host file's content or sbf's
// secret is in out or in anything sbf wrote (its state, the sim's guests,
// the workspace).
func (w *world) tellsNothing(out string) {
	w.t.Helper()
	leaks := []string{"hunter3", strings.SplitN(operatorToken, "=", 2)[1]}
	for _, leak := range leaks {
		if strings.Contains(out, leak) {
			w.t.Errorf("the output holds %q:\n%s", leak, out)
		}
	}
	for _, dir := range []string{w.state, w.ws, filepath.Join(w.base, "home")} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, leak := range leaks {
				if strings.Contains(string(b), leak) {
					w.t.Errorf("%s holds %q", p, leak)
				}
			}
			return nil
		})
	}
}
