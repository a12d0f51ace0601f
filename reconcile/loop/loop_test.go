package loop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/spec"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// The queue hands out the earliest due entry first, equal due times in
// key order, and follows reschedules.
func TestQueueHandsOutEarliestDueFirst(t *testing.T) {
	q := newQueue()
	for i, key := range []string{"/d", "/b", "pools\x00/a", "/a", "/c"} {
		q.add(&entry{key: key, due: t0.Add(time.Duration(i%2) * time.Minute)})
	}
	q.schedule(q.byKey["/c"], t0.Add(-time.Minute))
	var got []string
	for {
		en, ok := q.next()
		if !ok {
			break
		}
		if q.take() != en || !en.running() {
			t.Fatal("take did not remove the first entry")
		}
		got = append(got, strings.ReplaceAll(en.key, "\x00", " "))
	}
	if want := "[/c /d pools /a /a /b]"; fmt.Sprint(got) != want {
		t.Errorf("order %v, want %s", got, want)
	}
}

// Every file spec.Load reads, global ones included, is in the
// fingerprint, by content: an edit that keeps size and time still counts.
func TestFingerprintCoversEveryConfigFile(t *testing.T) {
	ws := spec.Options{Root: t.TempDir(), ConfigHome: t.TempDir()}
	files := spec.ConfigFiles(ws.Root, ws.ConfigHome)
	for _, want := range []string{filepath.Join(ws.ConfigHome, "sandboxforge", "config.toml"),
		filepath.Join(ws.Root, spec.FileName), filepath.Join(ws.Root, ".orbitforge.toml"),
		filepath.Join(ws.Root, spec.LocalFileName), filepath.Join(ws.Root, spec.Dir, spec.OverridesFile)} {
		if !strings.Contains(strings.Join(files, "\n")+"\n", want+"\n") {
			t.Errorf("spec.ConfigFiles misses %s: %v", want, files)
		}
	}
	seen := map[string]string{fingerprint(ws): "no files"}
	remember := func(what string) {
		t.Helper()
		fp := fingerprint(ws)
		if before, dup := seen[fp]; dup {
			t.Errorf("%s left the fingerprint as it was after %s", what, before)
		}
		seen[fp] = what
	}
	stamp := t0.Add(-time.Hour)
	for _, f := range files {
		testutil.WriteFile(t, f, "[vm]\ncpus = 1\n")
		if err := os.Chtimes(f, stamp, stamp); err != nil {
			t.Fatal(err)
		}
		remember("writing " + f)
		testutil.WriteFile(t, f, "[vm]\ncpus = 2\n")
		if err := os.Chtimes(f, stamp, stamp); err != nil {
			t.Fatal(err)
		}
		remember("editing " + f + " in place")
	}
}

// The default jitter waits between half the backoff and all of it.
func TestEqualJitterStaysWithinItsBackoff(t *testing.T) {
	for range 1000 {
		if got := equalJitter(time.Minute); got < 30*time.Second || got > time.Minute {
			t.Fatalf("equalJitter(1m) = %s", got)
		}
	}
}
