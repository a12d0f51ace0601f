package drivers

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestPoolNames(t *testing.T) {
	name := PoolInstanceName("1a2b3c4d", 12)
	if name != "sbf-pool-1a2b3c4d-12" {
		t.Fatalf("PoolInstanceName = %q", name)
	}
	if shape, n, ok := ParsePoolName(name); !ok || shape != "1a2b3c4d" || n != 12 {
		t.Errorf("ParsePoolName(%q) = %q %d %v", name, shape, n, ok)
	}
	for _, bad := range []string{"sbf-pool-1a2b3c4d-0", "sbf-pool-1a2b3c4d-01", "sbf-pool-1a2b3c4d-x",
		"sbf-pool-1A2B3C4D-1",
		"sbf-pool-1a2b3c4-1", "sbf-1a2b3c4d-api", "pool-1a2b3c4d-1"} {
		if _, _, ok := ParsePoolName(bad); ok {
			t.Errorf("ParsePoolName(%q) accepted it", bad)
		}
	}
	// A spare's name is never a sandbox's, nor the other way round.
	if _, _, ok := ParseInstanceName(name); ok {
		t.Errorf("ParseInstanceName accepts the spare name %s", name)
	}
	for n, want := range map[string]bool{name: true, "sbf-01234567-api": true, "default": false, "sbf-pool-x": false} {
		if ManagedName(n) != want {
			t.Errorf("ManagedName(%q) = %v", n, !want)
		}
	}
}

func TestShapeIgnoresWhatAdoptionChanges(t *testing.T) {
	base := Spec{Name: "a", CPUs: 2, MemoryGiB: 4, DiskGiB: 20, Arch: "x86_64", VMType: "qemu",
		Template: "template:docker"}
	other := base
	other.Name, other.Mounts, other.Ports, other.Emulation = "b", []string{"/src"}, []string{"8080:80"}, "never"
	if Shape("lima", base) != Shape("lima", other) {
		t.Error("name, mounts, ports or emulation change the shape")
	}
	for what, s := range map[string]Spec{
		"cpus": {CPUs: 3}, "memory": {MemoryGiB: 5}, "image": {Image: Image{Location: "/x.img"}},
		"arch": {Arch: "aarch64"},
	} {
		changed := base
		switch what {
		case "cpus":
			changed.CPUs = s.CPUs
		case "memory":
			changed.MemoryGiB = s.MemoryGiB
		case "image":
			changed.Image = s.Image
		case "arch":
			changed.Arch = s.Arch
		}
		if Shape("lima", changed) == Shape("lima", base) {
			t.Errorf("%s does not change the shape", what)
		}
	}
	if Shape("sim", base) == Shape("lima", base) {
		t.Error("the driver does not change the shape")
	}
}

func TestClaimDir(t *testing.T) {
	dir := t.TempDir()
	a, b := Owner{WorkspaceID: "ws_1", Sandbox: "a"}, Owner{WorkspaceID: "ws_1", Sandbox: "b"}
	if err := ClaimDir("x", filepath.Join(dir, "missing"), a); !errors.Is(err, ErrNotFound) {
		t.Errorf("claim of a missing folder: %v", err)
	}
	if err := ClaimDir("x", dir, a); err != nil {
		t.Fatal(err)
	}
	if err := ClaimDir("x", dir, a); err != nil {
		t.Errorf("claiming again for the same owner: %v", err)
	}
	var owned *OwnedError
	if err := ClaimDir("x", dir, b); !errors.As(err, &owned) || !errors.Is(err, ErrOwned) || owned.Owner != a {
		t.Errorf("claim by another owner: %v", err)
	}
	if err := WriteSpareLabel(dir, SpareLabel{Pool: "p", Shape: "1a2b3c4d"}); err != nil {
		t.Fatal(err)
	}
	l, err := ReadLabelDir(dir)
	if err != nil || l == nil || l.Spare.Pool != "p" || !l.OwnedBy("ws_1", "a") || l.OwnedBy("ws_1", "b") {
		t.Errorf("ReadLabelDir = %+v, %v", l, err)
	}
	if l, err := ReadLabelDir(t.TempDir()); l != nil || err != nil {
		t.Errorf("an unlabelled folder reads as %+v, %v", l, err)
	}
}

// An adopter's claim takes only a ready spare: a folder of that name with
// no spare label (its replacement, still booting) is not found.
func TestClaimDirOfASpareNeedsAReadySpare(t *testing.T) {
	dir := t.TempDir()
	adopter := Owner{WorkspaceID: "ws_1", Sandbox: "a", Spare: true}
	if err := ClaimDir("x", dir, adopter); !errors.Is(err, ErrNotFound) {
		t.Errorf("claim of an instance that is no ready spare: %v", err)
	}
	if l, _ := ReadLabelDir(dir); l != nil {
		t.Errorf("the refused claim left a label: %+v", l)
	}
	if err := ClaimDir("x", dir, Owner{Retired: true}); err != nil {
		t.Errorf("retiring an unlabelled instance (a fill left it): %v", err)
	}
	dir = t.TempDir()
	WriteSpareLabel(dir, SpareLabel{Pool: "p", Shape: "1a2b3c4d"})
	if err := ClaimDir("x", dir, adopter); err != nil {
		t.Errorf("claim of a ready spare: %v", err)
	}
}
