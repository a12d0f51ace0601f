package drivers

import "testing"

// A backend's own settings are part of what a VM is, and of a spare's shape; a spec
// without any keeps the shape it always had.
func TestBackendSettingsAreOfTheVM(t *testing.T) {
	a := Spec{Name: "x", CPUs: 1, MemoryGiB: 1, DiskGiB: 1}
	b := a
	b.Backend = map[string]string{"image": "reg/img:1"}
	if a.Equal(b) || Shape("kubevirt", a) == Shape("kubevirt", b) {
		t.Error("a spec's backend settings are ignored")
	}
	c := b
	c.Backend = map[string]string{"image": "reg/img:1"}
	if !b.Equal(c) || Shape("kubevirt", b) != Shape("kubevirt", c) {
		t.Error("equal settings differ")
	}
	// What Shape gave this spec before specs had backend settings: spares made then
	// still match.
	if got := Shape("sim", a); got != "3ecb7489" {
		t.Errorf("the shape of a spec without backend settings changed: %s", got)
	}
}
