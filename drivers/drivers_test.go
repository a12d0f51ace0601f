package drivers

import "testing"

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
