package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 45 * time.Second: "45s", 119 * time.Second: "119s", 5*time.Minute + 30*time.Second: "5m30s",
		5 * time.Minute: "5m", 10 * time.Minute: "10m", 118 * time.Minute: "1h58m", 2 * time.Hour: "2h",
		30 * time.Hour: "30h", 76 * time.Hour: "3d4h", 72 * time.Hour: "3d", 45 * 24 * time.Hour: "45d",
		800 * 24 * time.Hour: "2y70d",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %q, want %q", d, got, want)
		}
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := relativeTime(now.Add(118*time.Minute), now); got != "in 1h58m" {
		t.Errorf("relativeTime: %q", got)
	}
	if got := relativeTime(now.Add(-3*time.Minute), now); got != "3m ago" {
		t.Errorf("relativeTime: %q", got)
	}
}

// status shows AGE and the lease's end relative to now, with no trailing
// spaces; -o wide adds the times, --json has them.
func TestStatusAgeAndRelativeExpiry(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir(), "SBF_NOW": "2026-01-01T00:00:00Z"}
	if r := sbf(t, env, "-C", dir, "up", "--auto-approve", "api", "--ttl", "2h"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	env["SBF_NOW"] = "2026-01-01T00:02:00Z"
	r := sbf(t, env, "-C", dir, "status")
	if r.code != 0 || !strings.Contains(r.stdout, "AGE") || !strings.Contains(r.stdout, "in 1h58m") {
		t.Errorf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing space: %q", l)
		}
	}
	if r := sbf(t, env, "-C", dir, "status", "-o", "wide"); !strings.Contains(r.stdout, "2026-01-01T02:00:00Z") ||
		!strings.Contains(r.stdout, "EXPIRES AT") {
		t.Errorf("status -o wide:\n%s%s", r.stdout, r.stderr)
	}
	var doc struct {
		Sandboxes []struct {
			Name      string     `json:"name"`
			ExpiresAt *time.Time `json:"expires_at"`
			CreatedAt *time.Time `json:"created_at"`
		} `json:"sandboxes"`
	}
	r = sbf(t, env, "-C", dir, "status", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err, r.stdout)
	}
	for _, s := range doc.Sandboxes {
		if s.Name == "api" && (s.ExpiresAt == nil || s.CreatedAt == nil) {
			t.Errorf("status --json: api has no times: %s", r.stdout)
		}
	}
	if r := sbf(t, env, "-C", dir, "status", "-o", "yaml"); r.code != 2 {
		t.Errorf("status -o yaml: exit %d", r.code)
	}
	// A lease dropped by destroy shows no end still to come.
	if r := sbf(t, env, "-C", dir, "destroy", "api", "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r = sbf(t, env, "-C", dir, "status", "--all")
	if !strings.Contains(r.stdout, "destroyed") || strings.Contains(r.stdout, "in 1h58m") {
		t.Errorf("status --all after destroy:\n%s%s", r.stdout, r.stderr)
	}
}

// A TTL of zero is named in the refusal ("TTL 0m is invalid"), not left
// out as if no value had been given.
func TestZeroTTLIsNamed(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "-C", dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := sbf(t, env, "-C", dir, "clone", "api", "--ttl", "0m")
	if r.code == 0 || !strings.Contains(r.stderr, "TTL 0m is invalid") {
		t.Errorf("clone --ttl 0m: exit %d\n%s", r.code, r.stderr)
	}
}
