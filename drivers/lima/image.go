package lima

import (
	"errors"
	"fmt"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/images"
)

// cachedImage finds sbf images in the default caches (built by `sbf image
// build`; limactl refuses root, so the driver never builds them itself).
func cachedImage(getenv func(string) string, euid int) func(name, arch string) (images.Image, error) {
	return func(name, arch string) (images.Image, error) {
		recipes, err := images.Recipes(nil)
		if err != nil {
			return images.Image{}, err
		}
		r, ok := recipes[name]
		if !ok {
			return images.Image{}, fmt.Errorf("no sbf image %s%s (known: %v)", images.Scheme, name, images.Names(recipes))
		}
		if !r.Supports(arch) {
			return images.Image{}, fmt.Errorf("%s%s is built for %v only, not %s", images.Scheme, name, r.Arches, arch)
		}
		im, err := images.DefaultCache(getenv, euid).Lookup(r, arch)
		if errors.Is(err, images.ErrNotBuilt) {
			return images.Image{}, unavailable("image_not_built",
				fmt.Sprintf("the guest image %s%s is not built on this machine", images.Scheme, name),
				fmt.Sprintf("build it once as root (%s): sudo sbf image build %s", r.BuildTime, name),
				"or set [vm.image] location to a cloud image this machine can download")
		}
		return im, err
	}
}

// specImages turns the spec's image into Lima's images list: an sbf
// image (sbf:NAME) from the image cache, else the location as given.
func (d *Driver) specImages(s drivers.Spec) ([]image, error) {
	im := s.Image
	if im.Location == "" {
		return nil, nil
	}
	arch := s.Arch
	if arch == "" {
		arch = drivers.CanonicalArch(d.opts.HostArch)
	}
	if name, ok := images.NameOf(im.Location); ok {
		built, err := d.opts.Image(name, arch)
		if err != nil {
			return nil, err
		}
		im = drivers.Image{
			Location:      built.Disk,
			Kernel:        built.Kernel,
			Initrd:        built.Initrd,
			KernelCmdline: built.KernelCmdline,
		}
	}
	out := image{Location: im.Location, Arch: arch, Digest: im.Digest}
	if im.Kernel != "" {
		out.Kernel = &file{Location: im.Kernel, Cmdline: im.KernelCmdline}
	}
	if im.Initrd != "" {
		out.Initrd = &file{Location: im.Initrd}
	}
	return []image{out}, nil
}
