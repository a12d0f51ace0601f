package drivers

import (
	"regexp"
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
