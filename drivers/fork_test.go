package drivers

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Every value GuestScript writes unquoted into a guest's shell is hex, a
// number or a host name of [a-z0-9-]: a child's name (inst_…, a long
// sandbox name, anything a request chose) never becomes shell.
func TestForkIdentityIsSafeToWriteIntoAGuestsShell(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	a, err := NewForkIdentity("sbf-0123abcd-inst_Ab12-1", now)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewForkIdentity("sbf-0123abcd-inst_Ab12-2", now)
	if a.Hostname != "sbf-0123abcd-inst-ab12-1" || a.MachineID == b.MachineID || a.Seed == b.Seed ||
		!regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a.MachineID) ||
		!regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(a.Seed) {
		t.Fatalf("identities %+v %+v", a, b)
	}
	for _, name := range []string{"$(reboot)", "a;b c'd\"e`f", strings.Repeat("x", 100), "---", ""} {
		id, _ := NewForkIdentity(name, now)
		if !regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`).MatchString(id.Hostname) {
			t.Errorf("%q became host name %q", name, id.Hostname)
		}
	}
	script := a.GuestScript()
	for _, want := range []string{a.Seed + " > /dev/urandom", a.MachineID + " > /etc/machine-id",
		"hostname " + a.Hostname, "date -u -s @" + "1795932000"} {
		if !strings.Contains(script, want) {
			t.Errorf("the script lacks %q:\n%s", want, script)
		}
	}
}

func TestNoForkNamesTheNextStep(t *testing.T) {
	c := coded.Of(NoFork("vz", "api"), "")
	steps, _ := c.Details["next_steps"].([]string)
	if c.Code != coded.ForkUnsupported || c.Details["driver"] != "vz" || len(steps) != 2 ||
		!strings.Contains(steps[0], "sbf snapshot create api NAME") || !strings.Contains(steps[0], "clone_instance") {
		t.Errorf("%s %v", c.Code, c.Details)
	}
}

// A backend names its instances; the steps it suggests are commands that
// take sandbox names.
func TestAnUnsupportedForkNamesSandboxes(t *testing.T) {
	u := ForkUnsupported("lima", "forks sbf-ab12-api once", "sbf fork sbf-ab12-api-fork-1", "sbf clone sbf-ab12-api")
	named := u.(*UnsupportedError).Naming("sbf-ab12-api", "api")
	want := []string{"sbf fork api-fork-1", "sbf clone api"}
	if !slices.Equal(named.NextSteps, want) || named.Reason != "forks api once" || named.Code != coded.ForkUnsupported {
		t.Errorf("named: %q %q; want steps %q", named.Reason, named.NextSteps, want)
	}
	if u.(*UnsupportedError).NextSteps[0] != "sbf fork sbf-ab12-api-fork-1" {
		t.Errorf("Naming changed the error it was called on: %q", u.(*UnsupportedError).NextSteps)
	}
}

// The child's host name resolves from /etc/hosts where its source's did:
// the script's lines for that file, run by a real shell on a copy.
func TestGuestScriptNamesTheChildInHosts(t *testing.T) {
	id, err := NewForkIdentity("sbf-0123abcd-api-fork-2", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	before := "127.0.0.1\tlocalhost\n127.0.1.1\tlima-sbf-0123abcd-api\tlima-sbf-0123abcd-api\n" +
		"192.168.5.2\thost.lima.internal\n"
	if err := os.WriteFile(hosts, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(id.GuestScript(), "\n") {
		if strings.Contains(line, "/etc/hosts") {
			lines = append(lines, strings.ReplaceAll(line, "/etc/hosts", hosts))
		}
	}
	if out, err := exec.Command("sh", "-ec", strings.Join(lines, "\n")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got, _ := os.ReadFile(hosts)
	want := "127.0.0.1\tlocalhost\n192.168.5.2\thost.lima.internal\n127.0.1.1\tsbf-0123abcd-api-fork-2\n"
	if string(got) != want {
		t.Errorf("hosts after the script:\n%s\nwant:\n%s", got, want)
	}
}
