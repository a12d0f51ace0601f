package vz

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/images"
)

// bootFiles are what an instance is made from.
type bootFiles struct {
	Kernel, Initrd, Disk, CmdLine string
}

// resolveImage finds the files a spec boots: an sbf image (sbf:NAME) from
// the image cache, else the spec's own kernel, initrd and raw disk.
func (d *Driver) resolveImage(s drivers.Spec) (bootFiles, error) {
	name, ok := images.NameOf(s.Image.Location)
	if !ok {
		im := s.Image
		return bootFiles{Kernel: im.Kernel, Initrd: im.Initrd, Disk: im.Location, CmdLine: im.KernelCmdline}, nil
	}
	im, err := d.opts.Image(name, d.arch(s))
	if err != nil {
		return bootFiles{}, err
	}
	return bootFiles{Kernel: im.Kernel, Initrd: im.Initrd, Disk: im.Disk, CmdLine: im.KernelCmdline}, nil
}

func (d *Driver) arch(s drivers.Spec) string {
	if s.Arch != "" {
		return drivers.CanonicalArch(s.Arch)
	}
	return drivers.CanonicalArch(d.opts.HostArch)
}

// recipeProblem says why an sbf image cannot serve arch, "" when it can.
func (d *Driver) recipeProblem(name, arch string) string {
	recipes, err := d.opts.Recipes()
	if err != nil {
		return err.Error()
	}
	r, ok := recipes[name]
	if !ok {
		return fmt.Sprintf("boot %s%s: there is no such sbf image (known: %s)",
			images.Scheme, name, strings.Join(images.Names(recipes), ", "))
	}
	if !r.Supports(arch) {
		return fmt.Sprintf("boot %s%s on this %s host: the recipe builds %s images only, and "+
			"Virtualization.framework runs guests of the host's architecture only (an Apple silicon Mac needs an "+
			"aarch64 kernel, initrd and raw disk, which sbf does not build yet: set [vm.image] location, kernel and "+
			"initrd to your own)", images.Scheme, name, arch, strings.Join(r.Arches, ", "))
	}
	return ""
}

// builtRecipes are sbf's own recipes, or those of $SBF_IMAGE_RECIPES (as
// for sbf image build).
func builtRecipes(getenv func(string) string) func() (map[string]images.Recipe, error) {
	return func() (map[string]images.Recipe, error) {
		if dir := getenv("SBF_IMAGE_RECIPES"); dir != "" {
			return images.Recipes(os.DirFS(dir))
		}
		return images.Recipes(nil)
	}
}

// cachedImage finds sbf images in the default caches. `sbf image build`
// runs on Linux only (debootstrap), so on a Mac the image is built
// elsewhere and its folder copied into the cache.
func (d *Driver) cachedImage(euid int) func(name, arch string) (images.Image, error) {
	return func(name, arch string) (images.Image, error) {
		if p := d.recipeProblem(name, arch); p != "" {
			return images.Image{}, errors.New("cannot " + p)
		}
		recipes, _ := d.opts.Recipes()
		r := recipes[name]
		cache := images.DefaultCache(d.opts.Getenv, euid)
		im, err := cache.Lookup(r, arch)
		if errors.Is(err, images.ErrNotBuilt) {
			return images.Image{}, unavailable("image_not_built",
				fmt.Sprintf("the guest image %s%s is not built on this machine", images.Scheme, name),
				fmt.Sprintf("build it on a Linux %s machine (sudo sbf image build %s) and copy its folder into %s",
					arch, name, cache.Dirs[0]),
				"or set [vm.image] location (a raw disk), kernel and initrd to files on this Mac")
		}
		return im, err
	}
}
