package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A failed create is never reported as done: the summary counts what
// was done out of what was planned, each failure has a line of its own
// on stderr, and the exit status is 1 (issue 21, item 1).
func TestApplyNeverCountsAFailedChangeAsDone(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir(), "SBF_SIM_FAULTS": "create:*=fail"}
	r := sbf(t, env, "apply", "-C", dir, "--auto-approve")
	if r.code != 1 || strings.Contains(r.stdout, "Apply complete") ||
		!strings.Contains(r.stdout, "Apply failed: 0 of 2 added, 0 changed, 0 destroyed; 2 failed.") {
		t.Errorf("exit %d\n%s", r.code, r.stdout)
	}
	for _, name := range []string{"api", "web"} {
		if !strings.Contains(r.stderr, "\nsbf: sandbox "+name+": create: sim: injected create failure") &&
			!strings.HasPrefix(r.stderr, "sbf: sandbox "+name+": create") {
			t.Errorf("no error line of its own for %s:\n%s", name, r.stderr)
		}
	}
	r = sbf(t, env, "apply", "-C", dir, "--auto-approve", "--json")
	var rep struct {
		Applied bool
		Outcome struct {
			Done   struct{ Add int }
			Failed []struct{ Sandbox, Action, Error string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if r.code != 1 || rep.Outcome.Done.Add != 0 || len(rep.Outcome.Failed) != 2 ||
		rep.Outcome.Failed[0].Action != "create" || !strings.Contains(rep.Outcome.Failed[0].Error, "injected") {
		t.Errorf("--json: exit %d %+v", r.code, rep)
	}
}

// sbf up whose create fails says the sandbox was not created and its
// lease dropped, never that the lease ends later.
func TestUpFailureSaysTheLeaseWasDropped(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\n")
	env := map[string]string{"SBF_STATE_HOME": t.TempDir(), "SBF_SIM_FAULTS": "create:*=fail"}
	r := sbf(t, env, "up", "--auto-approve", "--new", "scratch", "-C", dir)
	if r.code != 1 || strings.Contains(r.stdout, "lease ends") || strings.Contains(r.stdout, "Apply complete") ||
		!strings.Contains(r.stdout, "scratch: not created; its lease was dropped") ||
		!strings.Contains(r.stdout, "Apply failed: 0 of 1 added") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Every apply renews the leases it keeps and says so; plan shows the
// renewal (lease_renewals in --json, old and new end); --detailed-exitcode
// treats a renewal alone as no change, --no-renew leaves it out; the end
// is recorded in state.json, so status after a destroy shows it
// (issue 21, item 2).
func TestLeaseRenewalsAreShownAndRecorded(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\nttl = \"1h\"\n[sandboxes.api]\n")
	env := map[string]string{"SBF_STATE_HOME": t.TempDir(), "SBF_NOW": "2026-11-26T10:00:00Z"}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 ||
		!strings.Contains(r.stdout, "api: lease acquired until 2026-11-26T11:00:00Z (in 1h).") {
		t.Fatalf("first apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	env["SBF_NOW"] = "2026-11-26T10:10:00Z"
	r := sbf(t, env, "plan", "-C", dir, "--detailed-exitcode")
	if r.code != 0 || !strings.Contains(r.stdout, "No changes.") ||
		!strings.Contains(r.stdout, "api: renewed until 2026-11-26T11:10:00Z (was 2026-11-26T11:00:00Z)") {
		t.Errorf("plan of a renewal: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		LeaseRenewals []struct {
			Sandbox string
			Old     string `json:"old_expires_at"`
			New     string `json:"new_expires_at"`
		} `json:"lease_renewals"`
	}
	r = sbf(t, env, "plan", "-C", dir, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.LeaseRenewals) != 1 ||
		rep.LeaseRenewals[0].Old != "2026-11-26T11:00:00Z" || rep.LeaseRenewals[0].New != "2026-11-26T11:10:00Z" {
		t.Errorf("plan --json: %v %+v\n%s", err, rep, r.stdout)
	}
	r = sbf(t, env, "plan", "-C", dir, "--json", "--no-renew", "--detailed-exitcode")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || len(rep.LeaseRenewals) != 0 {
		t.Errorf("plan --no-renew: exit %d %v\n%s", r.code, err, r.stdout)
	}
	r = sbf(t, env, "apply", "-C", dir, "--auto-approve")
	if r.code != 0 || !strings.Contains(r.stdout, "api: lease renewed until 2026-11-26T11:10:00Z (in 1h).") {
		t.Errorf("apply of a renewal: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if rec := readState(t, dir).Sandboxes["api"]; rec == nil || rec.ExpiresAt == nil ||
		rec.ExpiresAt.Format(time.RFC3339) != "2026-11-26T11:10:00Z" {
		t.Errorf("the state does not record the renewal: %+v", rec)
	}
	if r := sbf(t, env, "plan", "-C", dir); strings.Contains(r.stdout, "renewed") {
		t.Errorf("the plan right after a renewal renews again:\n%s", r.stdout)
	}
	if r := sbf(t, env, "destroy", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatalf("destroy: %s", r.stderr)
	}
	if r := sbf(t, env, "status", "-C", dir, "--all", "-o", "wide"); !strings.Contains(r.stdout, "2026-11-26T11:10:00Z") {
		t.Errorf("status after destroy shows another lease end:\n%s", r.stdout)
	}
}
