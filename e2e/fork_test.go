//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// testFork forks the running api sandbox from its memory (issue 44): a
// process started before the fork runs on in the child, which has its own
// hostname and machine id and a disk of its own; the source runs on.
func testFork(t *testing.T, w *ws) {
	w.must("a file and a process before the fork", "exec", "api", "--", "sh", "-c",
		"echo before > /tmp/fork-marker; (sleep 3000 >/dev/null 2>&1 &) ; pgrep -n sleep > /tmp/fork-sleeper")
	ident := "hostname; cat /etc/machine-id"
	source := strings.Fields(w.must("the source's identity", "exec", "api", "--", "sh", "-c", ident).stdout)
	start := time.Now()
	r := w.sbf("", nil, "fork", "api", "--json")
	record("sbf fork api: one running child from memory", start)
	var rep struct {
		Children []struct {
			Sandbox string `json:"sandbox"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || len(rep.Children) != 1 {
		t.Fatalf("sbf fork api --json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	child := rep.Children[0].Sandbox
	t.Cleanup(func() { w.sbf("", nil, "destroy", child, "--auto-approve") })
	start = time.Now()
	out := w.must("the child's first command", "exec", child, "--", "sh", "-c",
		"cat /tmp/fork-marker; kill -0 $(cat /tmp/fork-sleeper) && echo alive; "+ident).stdout
	record("sbf fork: the child's first command", start)
	got := strings.Fields(out)
	if len(got) != 4 || got[0] != "before" || got[1] != "alive" {
		t.Fatalf("the child reads %q; want the file and the process from before the fork", out)
	}
	if len(source) != 2 || got[2] == source[0] || got[3] == source[1] {
		t.Errorf("the child's hostname and machine id %v are its source's %v", got[2:], source)
	}
	w.must("the child writes", "exec", child, "--", "sh", "-c", "echo child > /tmp/fork-marker; sync")
	if out := w.must("the source reads", "exec", "api", "--", "cat", "/tmp/fork-marker").stdout; out != "before\n" {
		t.Errorf("the source reads %q after the child wrote: the disk is shared", out)
	}
	start = time.Now()
	w.must("destroy the child", "destroy", child, "--auto-approve")
	record("sbf destroy of the fork child", start)
}
