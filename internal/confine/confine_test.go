package confine

import (
	"strings"
	"testing"
)

func TestReportsSayWhatIsAndIsNotEnforced(t *testing.T) {
	cases := []struct {
		abi        int
		full       bool
		want, miss string
	}{
		{0, false, "unconfined (this kernel has no Landlock", ""},
		{1, false, "Landlock ABI 1: files read-only", "not enforced: no TCP; no signals or abstract sockets out"},
		{4, false, "Landlock ABI 4: files read-only to its folders, no write or exec; no TCP",
			"not enforced: no signals or abstract sockets out: Landlock ABI 4 is older than 6"},
		{7, true, "Landlock ABI 7: files read-only to its folders, no write or exec; no TCP; no signals", ""},
	}
	for _, tc := range cases {
		rep := reportFor(tc.abi)
		s := rep.String()
		if rep.Full() != tc.full || !strings.Contains(s, tc.want) || !strings.Contains(s, tc.miss) {
			t.Errorf("ABI %d: full %v, %q", tc.abi, rep.Full(), s)
		}
	}
}
