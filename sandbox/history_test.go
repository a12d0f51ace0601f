package sandbox_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
)

func history(t *testing.T, max int64) sandbox.History {
	dir := filepath.Join(t.TempDir(), ".sandboxforge")
	os.MkdirAll(dir, 0o755)
	return sandbox.History{Dir: dir, Max: max}
}

// Appends from many writers at once each land whole.
func TestHistoryAppendsWholeLines(t *testing.T) {
	h := history(t, 0)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := i
			ev := sandbox.Event{Tool: "exec", Sandbox: "api", Command: strings.Repeat("x", 3000), ExitCode: &code}
			if err := h.Append(t.Context(), ev, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	events, err := h.Read(nil, 0)
	if err != nil || len(events) != 20 {
		t.Fatalf("%d events, %v", len(events), err)
	}
	if c := events[0].Command; !strings.HasSuffix(c, "… (3000 bytes)") || len(c) > 2100 {
		t.Errorf("a long command is kept as %d bytes: %q", len(c), c[len(c)-20:])
	}
	if st, _ := os.Stat(filepath.Join(h.Dir, sandbox.HistoryFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("history mode %v", st.Mode())
	}
}

// Past its bound the history rotates: at most the previous file is kept.
func TestHistoryRotates(t *testing.T) {
	h := history(t, 1000)
	for i := range 60 {
		h.Append(t.Context(), sandbox.Event{Time: time.Unix(int64(i), 0), Tool: "t", Sandbox: fmt.Sprint("s", i)}, nil)
	}
	cur, _ := os.Stat(filepath.Join(h.Dir, sandbox.HistoryFile))
	old, _ := os.Stat(filepath.Join(h.Dir, sandbox.HistoryFile+".1"))
	if cur == nil || old == nil || cur.Size() > 1200 || old.Size() > 1200 {
		t.Fatalf("files: %v %v", cur, old)
	}
	events, _ := h.Read(nil, 0)
	if last := events[len(events)-1]; last.Sandbox != "s59" || len(events) >= 60 {
		t.Errorf("%d events kept, last %+v", len(events), last)
	}
	if tail, _ := h.Read(func(e sandbox.Event) bool { return e.Sandbox != "s59" }, 2); len(tail) != 2 ||
		tail[1].Sandbox != "s58" {
		t.Errorf("filtered tail: %+v", tail)
	}
}

// Where sbf keeps nothing, the history keeps nothing either.
func TestHistoryWritesNothingWithoutTheStateFolder(t *testing.T) {
	h := sandbox.History{Dir: filepath.Join(t.TempDir(), "absent")}
	if err := h.Append(t.Context(), sandbox.Event{Tool: "t"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.Dir); !os.IsNotExist(err) {
		t.Errorf("the history made %s", h.Dir)
	}
}

func TestRedactorHidesTheWorkspacesSecrets(t *testing.T) {
	s := sandboxtest.New(t, `[vm]
driver = "sim"
[infra.mysql]
root_password = "${DB_ROOT}"
extra_env = { MYSQL_PASSWORD = "hunter22", TZ = "UTC" }
[infra.redis]
extra_env = { API_KEY = "k3y-value" }
[sandboxes.api]
`, "api")
	redact := sandbox.Redactor(s.Resolved, func(k string) string { return map[string]string{"DB_ROOT": "r00tpw"}[k] })
	in := "mysql -p r00tpw -u app -phunter22 UTC k3y-value https://u:pass@host/x ${DB_ROOT} /root/x"
	want := "mysql -p *** -u app -p*** UTC *** https://u:***@host/x ${DB_ROOT} /root/x"
	if got := redact(in); got != want {
		t.Errorf("redacted:\n got %s\nwant %s", got, want)
	}
}

// The newest events, read from the end of the files chunk by chunk, are
// the tail of the whole history whatever the limit, filter or line lengths
// (lines straddle the chunks read).
func TestTheNewestEventsAreTheHistorysTail(t *testing.T) {
	h := history(t, 200<<10)
	for i := range 3000 {
		h.Append(t.Context(), sandbox.Event{Time: time.Unix(int64(i), 0), Tool: "t", Sandbox: fmt.Sprint("s", i%7),
			Command: strings.Repeat("c", i%1500)}, nil)
	}
	odd := func(e sandbox.Event) bool { return e.Time.Unix()%2 == 1 }
	for _, keep := range []func(sandbox.Event) bool{nil, odd} {
		all := readWhole(t, h, keep)
		if len(all) < 50 {
			t.Fatalf("the whole history: %d events", len(all))
		}
		for _, limit := range []int{1, 2, 37, 500, len(all), len(all) + 5, 0} {
			got, err := h.Read(keep, limit)
			want := all
			if limit > 0 {
				want = all[max(0, len(all)-limit):]
			}
			if err != nil || len(got) != len(want) || !got[0].Time.Equal(want[0].Time) ||
				!got[len(got)-1].Time.Equal(want[len(want)-1].Time) {
				t.Errorf("limit %d: %d events from %v, want %d from %v (%v)", limit, len(got), got[0].Time,
					len(want), want[0].Time, err)
			}
		}
	}
}

// readWhole is the history as its files hold it, oldest first, read line
// by line from the start.
func readWhole(t *testing.T, h sandbox.History, keep func(sandbox.Event) bool) []sandbox.Event {
	var out []sandbox.Event
	for _, name := range []string{sandbox.HistoryFile + ".1", sandbox.HistoryFile} {
		data, err := os.ReadFile(filepath.Join(h.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			var ev sandbox.Event
			if json.Unmarshal([]byte(line), &ev) == nil && (keep == nil || keep(ev)) {
				out = append(out, ev)
			}
		}
	}
	return out
}

// Something many runs see (a cluster's expiry, seen by every status and apply until one
// records it) is one line, whoever writes it at once and however far the history rotated
// since, as long as the lines written after it are within the window.
func TestAppendOnceWritesALineOnce(t *testing.T) {
	h := history(t, 600)
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	ev := sandbox.Event{Time: at, Door: "cluster", Tool: "expire", Sandbox: "api", InstanceID: "sbf-1-api"}
	same := func(o sandbox.Event) bool {
		return o.Door == ev.Door && o.InstanceID == ev.InstanceID && o.Time.Equal(at)
	}
	var wg sync.WaitGroup
	var wrote sync.Map
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := h.AppendOnce(t.Context(), ev, nil, same, 10*time.Minute)
			if err != nil {
				t.Error(err)
			}
			wrote.Store(i, ok)
		}()
	}
	wg.Wait()
	n := 0
	wrote.Range(func(_, ok any) bool {
		if ok.(bool) {
			n++
		}
		return true
	})
	count := func() int {
		events, err := h.Read(func(e sandbox.Event) bool { return same(e) }, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(events)
	}
	if c := count(); n != 1 || c != 1 {
		t.Fatalf("20 writers at once: %d wrote, %d lines; want 1", n, c)
	}
	// Later lines rotate it into history.jsonl.1: it is still found there.
	for i := range 5 {
		h.Append(t.Context(), sandbox.Event{Time: at.Add(time.Duration(i) * time.Second), Tool: "exec", Sandbox: "api",
			Command: strings.Repeat("y", 100)}, nil)
	}
	if ok, err := h.AppendOnce(t.Context(), ev, nil, same, 10*time.Minute); ok || err != nil || count() != 1 {
		t.Errorf("after a rotation: wrote %v (%v), %d lines; want it found", ok, err, count())
	}
	// Another time is another event.
	other := ev
	other.Time = at.Add(time.Hour)
	if ok, _ := h.AppendOnce(t.Context(), other, nil, func(o sandbox.Event) bool { return o.Time.Equal(other.Time) },
		10*time.Minute); !ok {
		t.Error("a departure at another time was not written")
	}
}

// Appends take no lock, rotations do: many writers crossing the bound at
// once rotate the history once, and every line is in one of its files.
func TestAppendsCrossingTheBoundRotateOnce(t *testing.T) {
	h := history(t, 16<<10)
	const writers, each = 8, 40 // ~100-byte lines: 32 KiB, one rotation and not two
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := h.Append(t.Context(), sandbox.Event{Tool: "t", Sandbox: fmt.Sprint("w", w, "-", i)},
					nil); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	lines := 0
	for _, name := range []string{sandbox.HistoryFile, sandbox.HistoryFile + ".1"} {
		data, err := os.ReadFile(filepath.Join(h.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			var ev sandbox.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: a line torn: %q", name, line)
			}
			lines++
		}
	}
	if lines != writers*each {
		t.Errorf("%d lines kept of %d (a second rotation replaced the first's file)", lines, writers*each)
	}
}
