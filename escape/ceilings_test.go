package escape

import (
	"path/filepath"
	"strings"
	"testing"
)

// greedyWorkspace asks for far more than the operator allows.
const greedyWorkspace = "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 500\nmax_ttl = \"2000h\"\n" +
	"max_lifetime = \"3000h\"\n"

// ceilingWorld is a world whose operator allowed one instance and 1h
// leases in the global config of its HOME, in its table: "lease" as the
// issue found it (a value the workspace replaced), or "policy"; "" writes
// no global config (the server's own ceilings).
func ceilingWorld(t *testing.T, table string) *world {
	w := newWorld(t, greedyWorkspace)
	if table != "" {
		w.write("home/.config/sandboxforge/config.toml", "["+table+"]\nmax_instances = 1\nmax_ttl = \"1h\"\n")
	}
	return w
}

// Finding 8 (issue 29) at the CLI: a global config with max_instances = 1
// and max_ttl = 1h under a workspace saying 500 and 2000h resolved to 500
// and 2000h. Now a second sandbox is INSTANCE_LIMIT_EXCEEDED, a 2h lease
// TTL_INVALID, and validate --show says 1 and 1h and where they came from.
func TestOperatorCeilingsBindTheCLI(t *testing.T) {
	t.Parallel()
	for _, table := range []string{"lease", "policy"} {
		t.Run(table, func(t *testing.T) { ceilingsBindTheCLI(t, table) })
	}
}

func ceilingsBindTheCLI(t *testing.T, table string) {
	w := ceilingWorld(t, table)
	sim := []string{"SBF_ENABLE_SIM=1"}
	if r := w.sbf(sim, "-C", w.ws, "up", "--auto-approve", "--new", "first", "--ttl", "30m"); r.code != 0 {
		t.Fatalf("up first: %d %s", r.code, r.stderr)
	}
	if r := w.sbf(sim, "-C", w.ws, "up", "--auto-approve", "--new", "second"); r.code == 0 ||
		!contains(r.stderr, "INSTANCE_LIMIT_EXCEEDED") &&
			!contains(r.stderr, "instance limit reached") {
		t.Errorf("up second: %d %s", r.code, r.stderr)
	}
	if r := w.sbf(sim, "-C", w.ws, "up", "--auto-approve", "first", "--ttl", "2h"); r.code == 0 ||
		!contains(r.stderr, "TTL") {
		t.Errorf("up first --ttl 2h: %d %s", r.code, r.stderr)
	}
	global := filepath.Join(w.base, "home/.config/sandboxforge/config.toml")
	r := w.sbf(sim, "-C", w.ws, "validate", "--show")
	for _, want := range []string{"max_instances = 1\n", "max_ttl = '1h'\n",
		"# max_instances = 1  (ceiling 1 from global config " + global + " [" + table + "] max_instances",
		"# max_ttl = 1h  (ceiling 1h from global config " + global + " [" + table + "] max_ttl"} {
		if r.code != 0 || !contains(r.stdout, want) {
			t.Errorf("validate --show lacks %q: %d\n%s%s", want, r.code, r.stdout, r.stderr)
		}
	}
	if r := w.sbf(sim, "-C", w.ws, "destroy", "--auto-approve"); r.code != 0 {
		t.Errorf("destroy: %d %s", r.code, r.stderr)
	}
}

// Findings 8 and 9 over MCP, through the official TypeScript SDK: the
// ceilings bind create_instance, extend_instance_ttl and a tool's
// overrides; run_command with max_output_bytes 2e9 on a guest printing
// 24 MiB per stream keeps 8 MiB of each; the policy resource shows them.
// Over stdio the limits are the global config's [lease] values, over
// HTTP its [policy] keys; the output ceiling is the server's own.
func TestOperatorCeilingsBindTheMCPTools(t *testing.T) {
	t.Parallel()
	for mode, table := range map[string]string{"stdio": "lease", "http": "policy"} {
		for _, phase := range []string{"limits", "output"} {
			t.Run(mode+"/"+phase, func(t *testing.T) {
				global := table
				if phase == "output" {
					global = ""
				}
				w := ceilingWorld(t, global)
				sim := []string{"SBF_ENABLE_SIM=1"}
				target, extra := sbfBinary, sim
				if mode == "http" {
					tok := "ceiling-token-of-the-escape-suite"
					target = w.serve(sim, "--token-file", w.tokenFile(tok))
					extra = append(extra, "CEIL_TOKEN="+tok)
				}
				w.ceilingAttack(phase, mode, target, extra...)
			})
		}
	}
}

// ceilingAttack runs one phase of ceilings.mjs with the official
// TypeScript SDK.
func (w *world) ceilingAttack(phase, mode, target string, extra ...string) {
	w.t.Helper()
	c := tsNode(w.t, "ceilings.mjs")
	c.Env = append(append([]string{}, w.env...), append(extra, "CEIL_PHASE="+phase, "CEIL_MODE="+mode,
		"CEIL_TARGET="+target, "CEIL_WS="+w.ws)...)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		w.t.Fatalf("ceilings.mjs %s over %s: %v\n%.4000s", phase, mode, err, out)
	}
}
