package hyperv

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

func specErrorKeys(err error) []string {
	var keys []string
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			var se *drivers.SpecError
			if errors.As(e, &se) {
				keys = append(keys, se.Key)
			}
		}
	}
	return keys
}

func TestValidateNamesWhatHyperVCannotHonour(t *testing.T) {
	d := goldenDriver()
	ok := spec("sbf-0123abcd-api")
	for name, tc := range map[string]struct {
		change func(*drivers.Spec)
		keys   []string
	}{
		"v1's defaults":      {func(*drivers.Spec) {}, nil},
		"no template":        {func(s *drivers.Spec) { s.Template = "" }, nil},
		"a local vhdx":       {func(s *drivers.Spec) { s.Image.Location = `D:\images\base.vhdx` }, nil},
		"Go's arch spelling": {func(s *drivers.Spec) { s.Arch = "amd64" }, nil},
		"lima's vm_type":     {func(s *drivers.Spec) { s.VMType = "qemu" }, []string{"vm_type"}},
		"a foreign arch":     {func(s *drivers.Spec) { s.Arch = "aarch64" }, []string{"arch"}},
		"another template":   {func(s *drivers.Spec) { s.Template = "template:ubuntu-24.04" }, []string{"template"}},
		"mounts":             {func(s *drivers.Spec) { s.Mounts = []string{"/src"} }, []string{"mounts"}},
		"ports":              {func(s *drivers.Spec) { s.Ports = []string{"8080:80"} }, []string{"ports"}},
		"always emulate":     {func(s *drivers.Spec) { s.Emulation = "always" }, []string{"emulation"}},
		"a URL": {func(s *drivers.Spec) { s.Image.Location = "https://example.org/x.vhdx" },
			[]string{"image.location"}},
		"an sbf image": {func(s *drivers.Spec) { s.Image.Location = "sbf:debian-12" },
			[]string{"image.location"}},
		"a qcow2":              {func(s *drivers.Spec) { s.Image.Location = `C:\x.qcow2` }, []string{"image.location"}},
		"a kernel":             {func(s *drivers.Spec) { s.Image.Kernel = `C:\vmlinuz` }, []string{"image.kernel"}},
		"a digest":             {func(s *drivers.Spec) { s.Image.Digest = "sha256:00" }, []string{"image.digest"}},
		"memory off the 2 MiB": {func(s *drivers.Spec) { s.MemoryGiB = 1.3 }, []string{"memory_gib"}},
		"disk off the 1 MiB":   {func(s *drivers.Spec) { s.DiskGiB = 10.0001 }, []string{"disk_gib"}},
		"several at once": {func(s *drivers.Spec) {
			s.VMType, s.Mounts, s.Ports = "vz", []string{"/a"},
				[]string{"1:2"}
		},
			[]string{"vm_type", "mounts", "ports"}},
	} {
		s := ok
		tc.change(&s)
		err := d.Validate(context.Background(), s)
		if keys := specErrorKeys(err); !slices.Equal(keys, tc.keys) {
			t.Errorf("%s: keys %v, want %v (%v)", name, keys, tc.keys, err)
		}
	}
}
