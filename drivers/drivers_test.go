package drivers

import (
	"fmt"
	"testing"
)

func TestInstanceNames(t *testing.T) {
	name := InstanceName("ws_0123456789ab", "api-1")
	if name != "sbf-01234567-api-1" {
		t.Fatalf("InstanceName = %q", name)
	}
	tag, sb, ok := ParseInstanceName(name)
	if !ok || tag != "01234567" || sb != "api-1" {
		t.Errorf("ParseInstanceName(%q) = %q %q %v", name, tag, sb, ok)
	}
	for _, foreign := range []string{"agent-1a2b3c4d", "sbf-", "sbf-0123456-api", "sbf-0123456g-api",
		"sbf-01234567api", "sbf-01234567-", "xsbf-01234567-api"} {
		if _, _, ok := ParseInstanceName(foreign); ok {
			t.Errorf("%q was taken for an sbf instance", foreign)
		}
	}
}

// Require records an ok or a failed check (keeping an UnavailableError's
// next steps) and says which; Finish makes one failure unusable.
func TestDiagnosisRequire(t *testing.T) {
	var d Diagnosis
	if !d.Require("host", "linux/amd64", nil) {
		t.Error("a met requirement reported unmet")
	}
	missing := &UnavailableError{Reason: "qemu not found", NextSteps: []string{"install QEMU"}}
	if d.Require("qemu", "unused", missing) {
		t.Error("an unmet requirement reported met")
	}
	d.Finish()
	want := []Check{{Name: "host", Status: CheckOK, Detail: "linux/amd64"},
		{Name: "qemu", Status: CheckFail, Detail: "qemu not found", NextSteps: []string{"install QEMU"}}}
	if fmt.Sprint(d.Checks) != fmt.Sprint(want) || d.Usable {
		t.Errorf("checks %+v, usable %v; want %+v, unusable", d.Checks, d.Usable, want)
	}
}
