package cloudinit

import "testing"

func TestShortNamesAreDistinctAndChecksummed(t *testing.T) {
	a, b := shortName("user-data", 1), shortName("user-date", 2)
	if string(a) != "USER-D~1   " || string(b) != "USER-D~2   " {
		t.Errorf("short names %q %q", a, b)
	}
	// The checksum from the VFAT specification's example algorithm.
	if got := shortChecksum([]byte("README  TXT")); got != 0x73 {
		t.Errorf("checksum %#x", got)
	}
}
