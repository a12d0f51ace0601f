package vz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/cloudinit"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
)

// Create makes a stopped instance: its folder, a clone of the image's
// disk grown to disk_gib, the kernel and initrd, an SSH key and the
// cloud-init seed; the configuration is written last, so a folder without
// one is a create that did not finish (listed as broken). A failed create
// leaves nothing behind.
func (d *Driver) Create(ctx context.Context, s drivers.Spec) (err error) {
	if err := d.Validate(ctx, s); err != nil {
		return err
	}
	f := d.folder(s.Name)
	if f.Exists() {
		return fmt.Errorf("vz instance %s already exists in %s", s.Name, f.Dir())
	}
	src, err := d.resolveImage(s)
	if err != nil {
		return err
	}
	c, err := translate(s, src.CmdLine, src.Initrd != "")
	if err != nil {
		return fmt.Errorf("creating %s: %w", s.Name, err)
	}
	if err := os.MkdirAll(d.opts.Dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", d.opts.Dir, err)
	}
	if err := os.Mkdir(f.Dir(), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", f.Dir(), err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(f.Dir())
		}
	}()
	if err := d.makeDisk(ctx, f, src, s); err != nil {
		return fmt.Errorf("creating %s: %w", s.Name, err)
	}
	if err := d.makeSeed(f, c); err != nil {
		return fmt.Errorf("creating %s: %w", s.Name, err)
	}
	return f.WriteConfig(c)
}

// makeDisk puts the root disk, kernel and initrd in the folder.
func (d *Driver) makeDisk(ctx context.Context, f layout.Folder, src bootFiles, s drivers.Spec) error {
	if err := checkDigest(src.Disk, s.Image.Digest); err != nil {
		return fmt.Errorf("checking the image: %w", err)
	}
	drivers.Progressf(ctx, "cloning %s", src.Disk)
	if err := cloneOrCopy(src.Disk, f.Path(layout.DiskFile)); err != nil {
		return err
	}
	if err := grow(f.Path(layout.DiskFile), diskBytes(s.DiskGiB)); err != nil {
		return err
	}
	if err := copyKernel(src.Kernel, f.Path(layout.KernelFile), d.arch(s)); err != nil {
		return err
	}
	if src.Initrd == "" {
		return nil
	}
	return cloneOrCopy(src.Initrd, f.Path(layout.InitrdFile))
}

// makeSeed writes the instance's key and its NoCloud seed. The
// instance id changes with the key, so a recreated instance is a new
// instance to cloud-init.
func (d *Driver) makeSeed(f layout.Folder, c layout.Config) error {
	pub, err := d.opts.keygen(f.Path(layout.KeyFile), "sbf-vz-"+f.Name)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(pub))
	seed := cloudinit.Seed{InstanceID: f.Name + "-" + hex.EncodeToString(sum[:4]), Hostname: hostname(f.Name),
		User: c.User, PublicKey: pub}
	img, err := seed.Image()
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.Path(layout.SeedFile), img, 0o600); err != nil {
		return fmt.Errorf("writing the cloud-init seed: %w", err)
	}
	return nil
}
