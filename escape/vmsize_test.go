package escape

import (
	"testing"
)

// Issue 39, point 6: the operator could cap the number of VMs and their
// leases, but not their size: a workspace or a client asked for 64 CPUs
// and 1 TiB of memory and the driver was told so. Now the global [policy]
// max_cpus, max_memory_gib and max_disk_gib bound every VM: a committed
// spec above them is lowered (with a warning at its position), a request
// above them is refused before anything is written.
func TestOperatorCeilingsBoundTheVMSize(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\ncpus = 16\nmemory_gib = 1024\n")
	w.write("home/.config/sandboxforge/config.toml",
		"[policy]\nmax_cpus = 2\nmax_memory_gib = 4\nmax_disk_gib = 10.5\n")
	sim := []string{"SBF_ENABLE_SIM=1"}
	r := w.sbf(sim, "-C", w.ws, "validate", "--show")
	for _, want := range []string{"cpus = 2\n", "memory_gib = 4.0\n", "disk_gib = 10.5\n",
		"16 is above the operator's ceiling 2", "1024 is above the operator's ceiling 4"} {
		if r.code != 0 || !contains(r.stdout+r.stderr, want) {
			t.Errorf("validate --show lacks %q: %d\n%s%s", want, r.code, r.stdout, r.stderr)
		}
	}
	if r := w.sbf(sim, "-C", w.ws, "plan", "--set", "vm.cpus=8"); r.code == 0 ||
		!contains(r.stderr, "8 is above the operator's ceiling 2") {
		t.Errorf("plan --set vm.cpus=8: %d %s", r.code, r.stderr)
	}
	c := startedIn(t, w, w.ws, append(w.env, sim...), "mcp", "-C", w.ws)
	for _, args := range []map[string]any{{"cpus": 3}, {"memory_gib": 4.5}, {"disk_gib": 1000}} {
		args["workspace_root"] = w.ws
		if code := toolCode(t, c, "create_instance", args); code != "VM_SIZE_LIMIT_EXCEEDED" {
			t.Errorf("create_instance %v: %q, want VM_SIZE_LIMIT_EXCEEDED", args, code)
		}
	}
	if w.exists("ws/.sandboxforge/overrides.toml") {
		t.Error("a refused size was written to the managed overrides")
	}
	if code := toolCode(t, c, "create_instance", map[string]any{"workspace_root": w.ws, "cpus": 2,
		"ttl_minutes": 5}); code != "" {
		t.Errorf("create_instance within the ceilings: %s", code)
	}
}
