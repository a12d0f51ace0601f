//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// forkChildren is how many children the e2e fork makes at once (issue 44's
// figure: four children answering within 30 s).
const forkChildren = 4

// testFork forks the running api sandbox from its memory (issue 44) into
// four children at once: a process started before the fork runs on in each,
// which has its own hostname, machine id and random bytes and a disk of its
// own; the source runs on.
func testFork(t *testing.T, w *ws) {
	w.must("a file and a process before the fork", "exec", "api", "--", "sh", "-c",
		"echo before > /tmp/fork-marker; (sleep 3000 >/dev/null 2>&1 &) ; pgrep -n sleep > /tmp/fork-sleeper")
	ident := "hostname; cat /etc/machine-id"
	source := strings.Fields(w.must("the source's identity", "exec", "api", "--", "sh", "-c", ident).stdout)
	start := time.Now()
	// Not --json: the text form keeps the progress (each step's time) on stderr.
	r := w.sbf("", nil, "fork", "api", "--count", fmt.Sprint(forkChildren))
	record(fmt.Sprintf("sbf fork api --count %d: running children from memory", forkChildren), start)
	t.Logf("sbf fork's progress (where its time went):\n%s", r.stderr)
	rep, err := parseForkReport(r.stdout)
	if err != nil || r.code != 0 || len(rep.Children) != forkChildren {
		t.Fatalf("sbf fork api: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	timings = append(timings, timing{"the source paused for the fork", rep.Paused})
	for _, c := range rep.Children {
		t.Cleanup(func() { w.sbf("", nil, "destroy", c.Sandbox, "--auto-approve") })
		t.Logf("fork child %s: %d KiB of its own files right after the fork", c.Sandbox, ownKiB(c.Instance))
	}
	seen := map[string]string{source[0]: "api", source[1]: "api"}
	for i, c := range rep.Children {
		start = time.Now()
		out := w.sbf("", nil, "exec", c.Sandbox, "--", "sh", "-c", "cat /tmp/fork-marker; "+
			"kill -0 $(cat /tmp/fork-sleeper) && echo alive; "+ident+"; od -An -tx1 -N16 /dev/urandom | tr -d ' \\n'")
		if i == 0 {
			record("sbf fork: a child's first command", start)
		}
		got := strings.Fields(out.stdout)
		if out.code != 0 || len(got) != 5 || got[0] != "before" || got[1] != "alive" {
			t.Fatalf("child %s reads %q (exit %d, %s); want the file and the process from before the fork",
				c.Sandbox, out.stdout, out.code, out.stderr)
		}
		for _, own := range got[2:] { // hostname, machine id, 16 random bytes
			if other, dup := seen[own]; dup {
				t.Errorf("child %s has %s's %q: hostname, machine id and random bytes must be its own",
					c.Sandbox, other, own)
			}
			seen[own] = c.Sandbox
		}
	}
	child := rep.Children[0].Sandbox
	w.must("the child writes", "exec", child, "--", "sh", "-c", "echo child > /tmp/fork-marker; sync")
	if out := w.must("the source reads", "exec", "api", "--", "cat", "/tmp/fork-marker").stdout; out != "before\n" {
		t.Errorf("the source reads %q after the child wrote: the disk is shared", out)
	}
	sibling := rep.Children[1].Sandbox
	if out := w.must("a sibling reads", "exec", sibling, "--", "cat", "/tmp/fork-marker").stdout; out != "before\n" {
		t.Errorf("a sibling reads %q after the child wrote: the disk is shared", out)
	}
	start = time.Now()
	// Throwaway copies: deleted at once, without the clean stop (four emulated
	// guests shutting down together take minutes).
	args := []string{"destroy", "--force", "--auto-approve"}
	for _, c := range rep.Children {
		args = append(args, c.Sandbox)
	}
	w.must("destroy the children in one call, forced", args...)
	record(fmt.Sprintf("sbf destroy --force of the %d fork children (one call)", forkChildren), start)
}

// forkReport is what `sbf fork` prints: how long the source paused, and
// each child's sandbox and instance.
type forkReport struct {
	Paused   time.Duration
	Children []struct{ Sandbox, Instance string }
}

// parseForkReport reads "Forked SOURCE into … (the source paused D)." and
// a line "  SANDBOX  INSTANCE  lease ends …" per child.
func parseForkReport(out string) (forkReport, error) {
	var rep forkReport
	_, paused, ok := strings.Cut(out, "(the source paused ")
	if !ok {
		return rep, fmt.Errorf("no pause reported")
	}
	paused, _, _ = strings.Cut(paused, ")")
	d, err := time.ParseDuration(paused)
	if err != nil {
		return rep, err
	}
	rep.Paused = d
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); strings.HasPrefix(line, "  ") && len(f) >= 2 {
			rep.Children = append(rep.Children, struct{ Sandbox, Instance string }{f[0], f[1]})
		}
	}
	return rep, nil
}

// ownKiB is the disk a Lima instance's folder holds that no other file
// shares (hard links to the source's frozen chain are shared).
func ownKiB(instance string) int64 {
	var total int64
	dir := filepath.Join(os.Getenv("LIMA_HOME"), instance)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(dir, e.Name()), &st) == nil && st.Nlink == 1 && e.Type().IsRegular() {
			total += st.Blocks * 512 / 1024
		}
	}
	return total
}
