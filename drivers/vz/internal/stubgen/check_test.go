package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCatchesMisuseOfTheVzAPI proves check-darwin can fail: the
// driver's framework file is replaced (go's -overlay, so the tree is not
// touched) by copies each carrying one mistake a Mac's compiler would
// reject, and the check must reject each, naming it.
func TestCheckCatchesMisuseOfTheVzAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("checks the driver for darwin several times")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(root, "drivers", "vz", "supervisor", "hypervisor_darwin.go")
	src := read(t, filepath.Dir(target), filepath.Base(target))
	opts := func(arches ...string) checkOptions {
		pkgs := []string{"./drivers/vz/supervisor"}
		return checkOptions{Root: root, Module: module, Packages: pkgs, Arches: arches, Go: "go"}
	}
	if err := check(opts("arm64", "amd64")); err != nil {
		t.Fatalf("the driver as committed fails the check: %v", err)
	}
	for _, tc := range []struct {
		name, from, to, arch, want string
	}{
		{"misspelt function", "vz.NewVirtioBlockDeviceConfiguration(att)", "vz.NewVirtioBlockDeviceConfiguraton(att)",
			"arm64", "undefined: vz.NewVirtioBlockDeviceConfiguraton"},
		{"arguments swapped", "vz.NewDiskImageStorageDeviceAttachment(d.Path, d.ReadOnly)",
			"vz.NewDiskImageStorageDeviceAttachment(d.ReadOnly, d.Path)", "arm64", "cannot use d.ReadOnly"},
		{"result ignored", "ok, err := m.vm.RequestStop()", "err := m.vm.RequestStop()",
			"amd64", "assignment mismatch"},
		{"a call only Apple silicon has, on Intel", "nic.SetMACAddress(mac)",
			"nic.SetMACAddress(mac)\n\t_, _ = vz.NewMacPlatformConfiguration()", "amd64",
			"undefined: vz.NewMacPlatformConfiguration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(src, tc.from) {
				t.Fatalf("%s no longer contains %q: update the test", target, tc.from)
			}
			o := opts(tc.arch)
			o.Overlay = overlay(t, target, strings.Replace(src, tc.from, tc.to, 1))
			err := check(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func overlay(t *testing.T, target, content string) string {
	t.Helper()
	dir := t.TempDir()
	edited := filepath.Join(dir, filepath.Base(target))
	if err := os.WriteFile(edited, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]map[string]string{"Replace": {target: edited}})
	path := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
