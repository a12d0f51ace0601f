package sim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandboxforge/sbf/drivers"
)

// A sim instance's memory and disk are its guest folder, so the state a
// fork saves is a copy of that folder (in a work folder of the world's,
// removed by Release), and each child is a new running instance whose
// guest folder is a copy of the saved one: no boot, and no file shared
// with the source or a sibling. The child's identity is written into its
// guest folder as a guest would keep it: etc/hostname and etc/machine-id
// (guest paths /etc/hostname, /etc/machine-id). The sim's commands run on
// this host, so its random state and clock are the host's already.

// SaveForFork copies the running source's guest folder once.
func (d *Driver) SaveForFork(ctx context.Context, source drivers.Spec) (drivers.ForkImage, error) {
	if err := d.begin(ctx, "fork-save", source.Name); err != nil {
		return nil, err
	}
	img, err := d.saveForFork(source.Name)
	return img, d.end("fork-save", source.Name, err)
}

func (d *Driver) saveForFork(source string) (*forkImage, error) {
	r, err := d.read(source)
	if err != nil {
		return nil, fmt.Errorf("forking %s: %w", source, err)
	}
	if r.Status != drivers.Running {
		return nil, fmt.Errorf("forking sim instance %s: it is %s, not running", source, r.Status)
	}
	work, err := d.workDir()
	if err != nil {
		return nil, err
	}
	if _, err := copyGuest(d.guestDir(source), filepath.Join(work, "guest")); err != nil {
		return nil, errors.Join(fmt.Errorf("saving the guest folder of %s: %w", source, err), os.RemoveAll(work))
	}
	return &forkImage{d: d, source: source, dir: work}, nil
}

// forkImage is a source's guest folder as a fork saved it; a template's
// is kept (its Release leaves it to the template's deletion).
type forkImage struct {
	d      *Driver
	source string
	dir    string
	kept   bool
}

// SaveTemplate saves the running source's guest folder beside it, as a
// fork saves it, and stops the source (drivers.Templater).
func (d *Driver) SaveTemplate(ctx context.Context, source drivers.Spec) error {
	if err := d.begin(ctx, "template-save", source.Name); err != nil {
		return err
	}
	err := d.saveTemplate(source.Name)
	if err = d.end("template-save", source.Name, err); err != nil {
		return err
	}
	return d.Stop(ctx, source.Name)
}

func (d *Driver) saveTemplate(name string) error {
	img, err := d.saveForFork(name)
	if err != nil {
		return err
	}
	defer os.RemoveAll(img.dir)
	if err := os.MkdirAll(filepath.Dir(d.templateDir(name)), 0o755); err != nil {
		return err
	}
	os.RemoveAll(d.templateDir(name))
	return os.Rename(img.dir, d.templateDir(name))
}

// OpenTemplate is the guest folder SaveTemplate kept for name.
func (d *Driver) OpenTemplate(ctx context.Context, name string) (drivers.ForkImage, error) {
	if err := d.begin(ctx, "template-open", name); err != nil {
		return nil, err
	}
	_, err := os.Stat(filepath.Join(d.templateDir(name), "guest"))
	if errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("sim instance %s is no memory template: %w", name, drivers.ErrNotFound)
	}
	if err = d.end("template-open", name, err); err != nil {
		return nil, err
	}
	return &forkImage{d: d, source: name, dir: d.templateDir(name), kept: true}, nil
}

// templateDir holds the guest folder a template saved.
func (d *Driver) templateDir(name string) string { return filepath.Join(d.dir, "templates", name) }

// StartChild makes child running from the saved guest folder.
func (f *forkImage) StartChild(ctx context.Context, child drivers.ForkChild) error {
	d, name := f.d, child.Spec.Name
	if err := d.begin(ctx, "fork-child", name); err != nil {
		return err
	}
	return d.end("fork-child", name, f.startChild(child))
}

func (f *forkImage) startChild(child drivers.ForkChild) error {
	d, name := f.d, child.Spec.Name
	if _, err := d.read(name); err == nil {
		return fmt.Errorf("sim instance %s already exists", name)
	}
	if err := d.clearLeftovers(name); err != nil {
		return err
	}
	if _, err := copyGuest(filepath.Join(f.dir, "guest"), d.guestDir(name)); err != nil {
		return fmt.Errorf("copying the saved guest folder of %s: %w", f.source, err)
	}
	if err := writeIdentity(d.guestDir(name), child.Identity); err != nil {
		return fmt.Errorf("giving sim instance %s its identity: %w", name, err)
	}
	return d.write(record{Name: name, Status: drivers.Running, Spec: child.Spec, CreatedAt: d.clock.Now().UTC()})
}

// writeIdentity writes the child's hostname and machine id into its guest
// folder, through a root that no link in it (the guest's) leads out of.
func writeIdentity(guest string, id drivers.ForkIdentity) error {
	root, err := os.OpenRoot(guest)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll("etc", 0o755); err != nil {
		return err
	}
	for file, value := range map[string]string{"etc/hostname": id.Hostname, "etc/machine-id": id.MachineID} {
		_ = root.Remove(file) // the source's, copied: a link there is replaced, never followed
		if err := root.WriteFile(file, []byte(value+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Release removes the saved guest folder.
func (f *forkImage) Release(context.Context) error {
	if f.kept {
		return nil
	}
	return f.d.end("fork-release", f.source, os.RemoveAll(f.dir))
}
