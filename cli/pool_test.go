package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

const poolSpec = `[vm]
driver = "sim"
cpus = 2
[pool.small]
size = 2
`

// The pool commands fill, show and drain a workspace's spares, and `sbf
// up` adopts one of them: its plan says so and no VM is booted for it.
func TestPoolFillStatusAdoptDrain(t *testing.T) {
	dir := simDir(t, poolSpec)
	env := map[string]string{"HOME": t.TempDir()}
	status := func() (rep poolReport) {
		t.Helper()
		r := sbf(t, env, "pool", "status", "-C", dir, "--json")
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
			t.Fatalf("pool status: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		return rep
	}
	if rep := status(); len(rep.Plan.Changes) != 2 || rep.Pools.Pools[0].Ready != 0 {
		t.Errorf("before the fill: %+v", rep)
	}
	r := sbf(t, env, "pool", "fill", "-C", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "Pool pass complete: 2 spares made, 0 deleted.") ||
		!strings.Contains(r.stdout, "small  sim") {
		t.Fatalf("pool fill: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "pool", "fill", "-C", dir); r.code != 0 ||
		!strings.Contains(r.stdout, "No changes. Pools are full.") {
		t.Errorf("a second fill: %d\n%s", r.code, r.stdout)
	}
	rep := status()
	if len(rep.Plan.Changes) != 0 || rep.Pools.Pools[0].Ready != 2 || len(rep.Pools.Pools[0].Spares) != 2 {
		t.Fatalf("after the fill: %+v", rep)
	}
	first := rep.Pools.Pools[0].Spares[0].Instance

	r = sbf(t, env, "up", "--auto-approve", "-C", dir, "--new", "agent", "--ttl", "20m")
	if r.code != 0 || !strings.Contains(r.stdout, "agent") || !strings.Contains(r.stdout, first) {
		t.Fatalf("up: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if rep := status(); rep.Pools.Pools[0].Ready != 1 || len(rep.Plan.Changes) != 1 {
		t.Errorf("after the adoption: %+v", rep.Pools)
	}

	if r := sbf(t, env, "pool", "drain", "-C", dir); r.code != 1 || !strings.Contains(r.stderr, "--auto-approve") {
		t.Errorf("drain without a terminal: %d %s", r.code, r.stderr)
	}
	if r := sbf(t, env, "pool", "drain", "-C", dir, "--auto-approve"); r.code != 0 ||
		!strings.Contains(r.stdout, "0 spares made, 1 deleted") {
		t.Errorf("drain: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Nothing left to drain: said so, not "Pools are full" beside READY 0.
	if r := sbf(t, env, "pool", "drain", "-C", dir, "--auto-approve"); r.code != 0 ||
		!strings.Contains(r.stdout, "No changes. No spares to drain.") || strings.Contains(r.stdout, "full") {
		t.Errorf("a second drain: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "status", "-C", dir, "--json"); !strings.Contains(r.stdout, `"instance": "`+first+`"`) ||
		!strings.Contains(r.stdout, `"live_status": "running"`) {
		t.Errorf("the adopted VM after the drain:\n%s", r.stdout)
	}
}
