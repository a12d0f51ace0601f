package sandbox_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
)

// The attack 9: a caller asked to keep 2 GB of output and the
// guest printed 400 MB; the server held all of it. Now a request's
// limit is lowered to the server's ceiling, the result says which limit
// applied, and the server's memory stays O(ceiling) whatever the guest
// prints.
func TestOutputIsHeldToTheServersCeiling(t *testing.T) {
	s := sandboxtest.New(t, "[vm]\ndriver = \"sim\"\n", "box")
	tgt := s.Target()
	const printed = 100 << 20
	req := drivers.ExecRequest{Command: "head -c 104857600 /dev/zero; head -c 104857600 /dev/zero >&2",
		MaxOutput: 2_000_000_000}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := tgt.Exec(context.Background(), req)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	ceiling := policy.DefaultMaxOutputBytes
	if int64(len(res.Stdout)) != ceiling || int64(len(res.Stderr)) != ceiling || res.MaxOutput != int(ceiling) ||
		!res.StdoutTruncated || !res.StderrTruncated || res.StdoutBytes != printed || res.StderrBytes != printed {
		t.Errorf("kept %d+%d of %d+%d bytes under limit %d (truncated %v %v)", len(res.Stdout), len(res.Stderr),
			res.StdoutBytes, res.StderrBytes, res.MaxOutput, res.StdoutTruncated, res.StderrTruncated)
	}
	t.Logf("allocated %d MiB", (after.TotalAlloc-before.TotalAlloc)>>20)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("the call allocated %d MiB for %d MiB of output kept", grew>>20, 2*ceiling>>20)
	}
	// The operator's ceiling lowers the server's; a smaller request keeps
	// its own limit.
	tgt.MaxOutput = 1000
	if res, err := tgt.Exec(context.Background(), req); err != nil || len(res.Stdout) != 1000 || res.MaxOutput != 1000 {
		t.Errorf("under a ceiling of 1000: kept %d, limit %d, %v", len(res.Stdout), res.MaxOutput, err)
	}
	req.MaxOutput = 10
	if res, err := tgt.Exec(context.Background(), req); err != nil || len(res.Stdout) != 10 || res.MaxOutput != 10 {
		t.Errorf("asking 10: kept %d, limit %d, %v", len(res.Stdout), res.MaxOutput, err)
	}
}
