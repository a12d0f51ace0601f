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
