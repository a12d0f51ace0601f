package drivers

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

func TestSnapshotNamesAreNeverPathsNorOptions(t *testing.T) {
	for _, good := range []string{"a", "before-migration", "v1.2_ok", "0", strings.Repeat("x", MaxSnapshotName)} {
		if !ValidSnapshotName(good) || CheckSnapshotName("name", good) != nil {
			t.Errorf("%q refused", good)
		}
	}
	for _, bad := range []string{"", "-tag", ".hidden", "a/b", `a\b`, "a..b", "..", "a b", "é", "a\x00",
		strings.Repeat("x", MaxSnapshotName+1), "_x", "a:b", "$(id)"} {
		if ValidSnapshotName(bad) {
			t.Errorf("%q accepted", bad)
		}
		var ce *coded.Error
		if err := CheckSnapshotName("name", bad); !errors.As(err, &ce) || ce.Code != coded.InvalidArguments {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestSnapshotUnsupportedIsCodedWithNextSteps(t *testing.T) {
	err := SnapshotUnsupported("lima", "keeps no snapshots of vm_type vz", `set vm_type = "qemu"`)
	ce := coded.Of(err, coded.Unknown)
	if ce.Code != coded.SnapshotUnsupported || ce.Details["driver"] != "lima" ||
		!strings.Contains(ce.Message, "the lima driver keeps no snapshots of vm_type vz (next: set") {
		t.Errorf("%+v", ce)
	}
}
