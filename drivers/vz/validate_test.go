package vz

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/images"
)

func validator(t *testing.T) *Driver {
	t.Helper()
	d, err := New(Options{Dir: t.TempDir(), HostOS: "darwin", HostArch: "arm64", Getenv: func(string) string { return "" },
		StartSupervisor: func(string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// keys are the configuration keys a validation error names, sorted.
func keys(err error) []string {
	var out []string
	for _, e := range flatten(err) {
		var se *drivers.SpecError
		if errors.As(e, &se) {
			out = append(out, se.Key)
		}
	}
	slices.Sort(out)
	return out
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

func TestValidateNamesEveryKeyVzCannotHonour(t *testing.T) {
	d := validator(t)
	plain := drivers.Image{Location: "/images/disk.img", Kernel: "/images/Image", Initrd: "/images/initrd"}
	for name, tc := range map[string]struct {
		edit func(*drivers.Spec)
		want []string
	}{
		"a plain image":           {func(s *drivers.Spec) { s.Image = plain }, nil},
		"vm_type qemu":            {func(s *drivers.Spec) { s.VMType = "qemu" }, []string{"vm_type"}},
		"vm_type left to default": {func(s *drivers.Spec) { s.VMType = "" }, nil},
		"another arch":            {func(s *drivers.Spec) { s.Arch = "x86_64"; s.Image = plain }, []string{"arch"}},
		"Go's arch spelling":      {func(s *drivers.Spec) { s.Arch = "arm64"; s.Image = plain }, nil},
		"emulation always":        {func(s *drivers.Spec) { s.Emulation = "always" }, []string{"emulation"}},
		"mounts":                  {func(s *drivers.Spec) { s.Mounts = []string{"~/src:/src"} }, []string{"mounts"}},
		"ports":                   {func(s *drivers.Spec) { s.Ports = []string{"8080:80"} }, []string{"ports"}},
		"a Lima template":         {func(s *drivers.Spec) { s.Image = drivers.Image{} }, []string{"template"}},
		"a URL": {func(s *drivers.Spec) {
			s.Image.Location, s.Image.Kernel = "https://example.invalid/x.img", "/k"
		}, []string{"image.location"}},
		"a qcow2 disk": {func(s *drivers.Spec) {
			s.Image = plain
			s.Image.Location = "/i/disk.qcow2"
		}, []string{"image.location"}},
		"no kernel":     {func(s *drivers.Spec) { s.Image = plain; s.Image.Kernel = "" }, []string{"image.kernel"}},
		"an md5 digest": {func(s *drivers.Spec) { s.Image = plain; s.Image.Digest = "md5:abc" }, []string{"image.digest"}},
		"an x86_64-only sbf image on arm64": {func(s *drivers.Spec) { s.Image.Location = "sbf:debian-12" },
			[]string{"image.location"}},
		"an unknown sbf image": {func(s *drivers.Spec) { s.Image.Location = "sbf:nope" }, []string{"image.location"}},
		"everything at once": {func(s *drivers.Spec) {
			s.VMType, s.Mounts, s.Ports, s.Image = "qemu", []string{"/a"}, []string{"1:2"}, drivers.Image{}
		}, []string{"mounts", "ports", "template", "vm_type"}},
	} {
		s := testSpec("api")
		s.Image.Location = "sbf:test"
		d.opts.Recipes = func() (map[string]images.Recipe, error) {
			recipes, err := images.Recipes(nil)
			recipes["test"] = images.Recipe{Name: "test", Arches: []string{"aarch64"}}
			return recipes, err
		}
		tc.edit(&s)
		if got := keys(d.Validate(context.Background(), s)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: keys %v, want %v (%v)", name, got, tc.want, d.Validate(context.Background(), s))
		}
	}
}

func TestValidateExplainsTheX86OnlyImageHonestly(t *testing.T) {
	s := testSpec("api")
	s.Image.Location = "sbf:debian-12"
	err := validator(t).Validate(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "x86_64 images only") || !strings.Contains(err.Error(), "aarch64") {
		t.Errorf("err = %v", err)
	}
	intel := validator(t)
	intel.opts.HostArch = "amd64"
	s.Arch = "x86_64"
	if err := intel.Validate(context.Background(), s); err != nil {
		t.Errorf("sbf:debian-12 on an Intel Mac: %v", err)
	}
}
