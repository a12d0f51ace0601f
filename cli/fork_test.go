package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// sbf fork: children from the source's state, with progress on stderr and
// a JSON report; refusals (the cap, a bad count) exit 1 and make nothing.
func TestForkCommand(t *testing.T) {
	w := applied(t) // api and web: 2 of the cap's 3
	w.must("exec", "api", "--", "sh", "-c", "echo warm > a.txt")
	if r := w.run(nil, "fork", "api", "--count", "2"); r.code != 1 ||
		!strings.Contains(r.stderr, "instance limit reached") {
		t.Fatalf("a fork the cap cannot hold whole: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := w.run(nil, "fork", "api", "--name-prefix", "try", "--count", "1", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "A fork of api would make try-1 (nothing was made)") {
		t.Fatalf("fork --dry-run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = w.run(nil, "fork", "api", "--name-prefix", "try")
	if r.code != 0 || !strings.Contains(r.stdout, "Forked api into try-1 (the source paused ") ||
		!strings.Contains(r.stderr, "api: save done") || !strings.Contains(r.stderr, "try-1: fork done") {
		t.Fatalf("fork: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run(nil, "exec", "try-1", "--", "cat", "a.txt"); r.stdout != "warm\n" {
		t.Errorf("the child reads %q %s", r.stdout, r.stderr)
	}
	r = w.run(nil, "fork", "api", "--json")
	var refused struct {
		Children []any
		Error    struct {
			Code string `json:"error_code"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &refused); err != nil || r.code != 1 ||
		refused.Error.Code != "INSTANCE_LIMIT_EXCEEDED" || refused.Children == nil || len(refused.Children) != 0 {
		t.Errorf("fork --json at the cap: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	w.must("destroy", "try-1", "--auto-approve")
	r = w.run(nil, "fork", "api", "--json")
	var rep struct {
		Source   string
		Children []struct {
			Sandbox   string `json:"sandbox"`
			Instance  string `json:"instance"`
			ExpiresAt string `json:"expires_at"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || rep.Source != "api" ||
		len(rep.Children) != 1 || rep.Children[0].Sandbox != "api-fork-1" || rep.Children[0].ExpiresAt == "" {
		t.Fatalf("fork --json: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if r.stderr != "" {
		t.Errorf("fork --json wrote progress: %s", r.stderr)
	}
	if r := w.run(nil, "fork", "api", "--count", "0", "--json"); r.code != 1 ||
		!strings.Contains(r.stdout, `"error_code": "INVALID_ARGUMENTS"`) {
		t.Errorf("--count 0: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run(nil, "history", "api-fork-1", "--json"); !strings.Contains(r.stdout, `"tool": "fork"`) {
		t.Errorf("history: %s", r.stdout)
	}
}
