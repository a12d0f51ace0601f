package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// sbf stats samples each running sandbox; sbf health fails when one that
// holds a lease does not answer.
func TestStatsAndHealth(t *testing.T) {
	t.Parallel()
	w := applied(t)
	w.must("exec", "api", "--", "true")
	r := w.run(nil, "stats", "--json")
	var s struct {
		Sandboxes []struct {
			Sandbox   string
			LeaseLeft int64 `json:"lease_seconds_left"`
			Stats     struct {
				SharedWithHost bool `json:"shared_with_host"`
			}
			LastCommand *struct{ Command string } `json:"last_command"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || len(s.Sandboxes) != 2 {
		t.Fatalf("stats --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if api := s.Sandboxes[0]; api.Sandbox != "api" || api.LeaseLeft <= 0 || !api.Stats.SharedWithHost ||
		api.LastCommand == nil || api.LastCommand.Command != "true" {
		t.Errorf("api: %+v", api)
	}
	if r := w.run(nil, "stats", "web"); r.code != 0 || !strings.Contains(r.stdout, "web") {
		t.Errorf("stats web: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run(nil, "health"); r.code != 0 || strings.Count(r.stdout, " ok ") != 2 {
		t.Errorf("health: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.must("destroy", "web", "--auto-approve")
	if r := w.run(nil, "health", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"no lease"`) {
		t.Errorf("health after destroying one: %d\n%s", r.code, r.stdout)
	}
}
