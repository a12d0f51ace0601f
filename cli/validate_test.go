package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// validate says its verdict in one line; --show adds the resolved
// configuration (issue 21, item 5).
func TestValidateVerdictIsOneLine(t *testing.T) {
	dir := simDir(t, simSpec)
	r := sbf(t, nil, "validate", "-C", dir)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "Valid: ") ||
		!strings.Contains(r.stdout, "sandboxes: api, web") {
		t.Errorf("exit %d\n%s", r.code, r.stdout)
	}
	if r := sbf(t, nil, "validate", "-C", dir, "--show"); !strings.HasPrefix(r.stdout, "Valid: ") ||
		!strings.Contains(r.stdout, "[sandboxes.web]") {
		t.Errorf("--show:\n%s", r.stdout)
	}
}

// An unset ${VAR} is a warning for validate (a fork's pull request has no
// secrets), an error with --strict, and still an error for plan (issue
// 21, item 9).
func TestValidateWithoutTheEnvironment(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\n[infra.mysql]\nroot_password = \"${SBF_TEST_UNSET_PASSWORD}\"\n"+
		"[sandboxes.web]\nservices = [\"mysql\"]\ncompose = true\n")
	write(t, filepath.Join(dir, "compose.yaml"), "services:\n  app:\n    image: alpine\n")
	r := sbf(t, nil, "validate", "-C", dir)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Valid: ") ||
		!strings.Contains(r.stderr, "warning:") || !strings.Contains(r.stderr, "${SBF_TEST_UNSET_PASSWORD}") {
		t.Errorf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Valid    bool
		Warnings []struct{ Message string }
	}
	r = sbf(t, nil, "validate", "-C", dir, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || !rep.Valid || len(rep.Warnings) != 1 {
		t.Errorf("validate --json: %v %+v", err, rep)
	}
	if r := sbf(t, nil, "validate", "-C", dir, "--strict"); r.code != 1 ||
		!strings.Contains(r.stderr, "${SBF_TEST_UNSET_PASSWORD}, which is not set") {
		t.Errorf("validate --strict: exit %d\n%s", r.code, r.stderr)
	}
	if r := sbf(t, nil, "plan", "-C", dir); r.code != 1 || !strings.Contains(r.stderr, "not set") {
		t.Errorf("plan: exit %d\n%s", r.code, r.stderr)
	}
	// The rest of the shape is still checked: a broken compose file fails.
	write(t, filepath.Join(dir, "compose.yaml"), "services: [\n")
	if r := sbf(t, nil, "validate", "-C", dir); r.code != 1 || !strings.Contains(r.stderr, "compose.yaml") {
		t.Errorf("validate of a broken compose file: exit %d\n%s", r.code, r.stderr)
	}
}

// validate --show and --json show the operator's ceilings, the values in
// effect and where each came from; a workspace value above a ceiling is
// lowered with a warning at its position (issue 29, attack 8).
func TestValidateShowsTheOperatorsCeilings(t *testing.T) {
	dir := simDir(t, simSpec+"[lease]\nmax_instances = 500\nmax_ttl = \"2000h\"\nmax_lifetime = \"3000h\"\n")
	global := filepath.Join(testHome(t), ".config", "sandboxforge", "config.toml")
	write(t, global, "[policy]\nmax_instances = 1\nmax_ttl = \"1h\"\n")
	env := map[string]string{"MAX_INSTANCES": "2"}
	r := sbf(t, env, "validate", "-C", dir, "--show")
	for _, want := range []string{"max_instances = 1\n", "max_ttl = '1h'\n",
		"# max_instances = 1  (ceiling 1 from global config " + global +
			" [policy] max_instances; value from the ceiling)",
		"# max_ttl = 1h  (ceiling 1h from global config " + global + " [policy] max_ttl",
		"# max_lifetime = 125d  (no ceiling: the workspace decides; value from .sandboxforge.toml)",
		"# max_output_bytes = 8388608 (8.0 MiB)  (ceiling 8388608 (8.0 MiB) from default",
		"# max_cpus = none  (no ceiling: the workspace decides)\n"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("--show lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "lease.max_instances: 500 is above the operator's ceiling 1") {
		t.Errorf("warnings:\n%s", r.stderr)
	}
	var rep struct {
		Ceilings []struct {
			Key, Source    string
			Ceiling, Value any
		}
	}
	r = sbf(t, map[string]string{"MAX_INSTANCES": "1", "MAX_TTL_MINUTES": "30"}, "validate", "-C", dir, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Ceilings) != 8 {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if c := rep.Ceilings[1]; c.Key != "max_ttl" || c.Ceiling != "30m" || c.Value != "30m" ||
		c.Source != "env MAX_TTL_MINUTES" {
		t.Errorf("max_ttl = %+v", c)
	}
}
