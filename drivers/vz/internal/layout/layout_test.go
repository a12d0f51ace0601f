package layout

import (
	"strings"
	"testing"
)

func TestSocketPathFitsASockaddr(t *testing.T) {
	short := Folder{Base: "/tmp/vz", Name: "sbf-0123abcd-api"}
	if got := short.Socket(); got != "/tmp/vz/sbf-0123abcd-api/control.sock" {
		t.Errorf("socket %q", got)
	}
	long := Folder{Base: "/Users/someone-with-a-long-name/.local/state/sandboxforge/vz",
		Name: "sbf-0123abcd-" + strings.Repeat("x", 40)}
	got := long.Socket()
	if len(got) > maxSocketBytes || !strings.HasPrefix(got, long.Base+"/run/") {
		t.Errorf("socket %q (%d bytes)", got, len(got))
	}
	other := long
	other.Name += "y"
	if other.Socket() == got {
		t.Error("two instances share a socket")
	}
}
