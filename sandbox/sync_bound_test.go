package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
)

// A guest can make the sync manifest sbf reads back as large as it likes:
// past its bound the read stops and everything is sent again.
func TestSyncReadsABoundedManifestBack(t *testing.T) {
	s := sandboxtest.New(t, "[vm]\ndriver = \"sim\"\n", "box")
	tgt := s.Target()
	ctx := context.Background()
	make := drivers.ExecRequest{Command: "mkdir -p dst && truncate -s 256M dst/.sbf-sync.json"}
	if res, err := tgt.Exec(ctx, make); err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	src := filepath.Join(s.Root, "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rep, err := tgt.Sync(ctx, hostpath.Policy{Roots: []string{s.Root}}, s.Root, "src", "dst", nil)
	runtime.ReadMemStats(&after)
	if err != nil || rep.Sent != 1 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	t.Logf("allocated %d MiB", (after.TotalAlloc-before.TotalAlloc)>>20)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 128<<20 {
		t.Errorf("reading a 256 MiB manifest back allocated %d MiB", grew>>20)
	}
}
