package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// --set values are the same TOML values in every command: plan, apply, up
// and extend load the desired state twice (before and after their edit),
// and used to reject the second load ("must be a positive integer (got
// int)").
func TestSetIntegersWorkInEveryCommand(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	env := map[string]string{"SBF_STATE_HOME": filepath.Join(dir, "host")}
	for _, args := range [][]string{
		{"validate"}, {"plan"}, {"apply", "--auto-approve"}, {"up", "api", "--auto-approve"}, {"extend", "api", "10m"},
	} {
		args = append(args, "--set", "vm.cpus=2", "--set", "vm.ttl=1h", "--set", "vm.memory_gib=3")
		r := sbf(t, env, append([]string{"-C", dir}, args...)...)
		if r.code != 0 {
			t.Errorf("sbf %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	if r := sbf(t, env, "-C", dir, "status", "--json"); !strings.Contains(r.stdout, `"phase": "running"`) {
		t.Errorf("status: %s", r.stdout)
	}
}

func TestOversizedDurationSaysBothValues(t *testing.T) {
	dir := t.TempDir()
	r := sbf(t, nil, "-C", dir, "validate", "--set", `lease.max_ttl="1000000d"`)
	if r.code != 1 ||
		!strings.Contains(r.stderr,
			`lease.max_ttl: "1000000d" is longer than the longest duration sbf accepts (36500d)`) {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
