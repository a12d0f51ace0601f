package external

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// A plugin is never run from a PATH folder a copy from a sandbox may write
// (a served workspace, an allowed path), nor through a link into one, nor
// from a relative PATH entry; the error says what was passed over and why.
func TestPluginsAreNotTakenFromFoldersGuestsWrite(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, allowed, trusted, linked := filepath.Join(base, "ws"), filepath.Join(base, "allowed"),
		filepath.Join(base, "usr-bin"), filepath.Join(base, "linked")
	for _, dir := range []string{ws + "/bin", allowed, trusted, linked} {
		os.MkdirAll(dir, 0o755)
	}
	for _, dir := range []string{ws + "/bin", allowed, trusted} {
		os.WriteFile(filepath.Join(dir, "sbf-kubevirt"), []byte("#!/bin/sh\n"), 0o755)
	}
	os.Symlink(filepath.Join(ws, "bin", "sbf-kubevirt"), filepath.Join(linked, "sbf-kubevirt"))
	os.Symlink(filepath.Join(ws, "bin"), filepath.Join(base, "wsbin"))
	list := strings.Join([]string{filepath.Join(ws, "bin"), filepath.Join(base, "wsbin"), allowed, linked, "relative",
		trusted}, string(os.PathListSeparator))
	t.Chdir(ws)
	os.MkdirAll("relative", 0o755)
	os.WriteFile(filepath.Join("relative", "sbf-kubevirt"), []byte("#!/bin/sh\n"), 0o755)
	getenv := func(k string) string { return map[string]string{"PATH": list}[k] }
	path, err := KubeVirt.Find(getenv, []string{ws, allowed}, nil)
	if err != nil || path != filepath.Join(trusted, "sbf-kubevirt") {
		t.Fatalf("Find: %q %v, want the one in %s", path, err, trusted)
	}
	getenv = func(k string) string {
		return map[string]string{"PATH": strings.Join(strings.Split(list, string(os.PathListSeparator))[:5],
			string(os.PathListSeparator))}[k]
	}
	_, err = KubeVirt.Find(getenv, []string{ws, allowed}, nil)
	var u *drivers.UnavailableError
	if !errors.As(err, &u) {
		t.Fatalf("Find with only untrusted copies: %v", err)
	}
	for _, want := range []string{"passed over " + filepath.Join(ws, "bin", "sbf-kubevirt"), "inside " + ws,
		filepath.Join(base, "wsbin"), "inside " + allowed, "the PATH entry " + linked,
		"the PATH entry relative is relative"} {
		if !strings.Contains(u.Reason, want) {
			t.Errorf("the reason misses %q:\n%s", want, u.Reason)
		}
	}
	// Without the operator's folders named, the same PATH finds the first.
	if path, _ := KubeVirt.Find(getenv, nil, nil); path != filepath.Join(ws, "bin", "sbf-kubevirt") {
		t.Errorf("Find with nothing guest-writable: %q", path)
	}
}
