package lima

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
)

// A memory template (drivers.Templater) is a fork kept: the instance is
// saved as SaveForFork saves a source (its memory in fork-TAG.state, its
// disk frozen in fork-base-TAG.qcow2), then halted for good. Its children
// link those files as a fork's do, so deleting the template (limactl
// delete) leaves every child's chain whole.

// SaveTemplate saves the running instance as a fork's source and halts it.
func (d *Driver) SaveTemplate(ctx context.Context, source drivers.Spec) error {
	if _, err := d.SaveForFork(ctx, source); err != nil {
		return fmt.Errorf("saving memory template %s: %w", source.Name, err)
	}
	// Halted, not shut down: its guest must never run on from the state saved.
	if err := d.ForceStop(ctx, source.Name); err != nil {
		return fmt.Errorf("halting memory template %s: %w", source.Name, err)
	}
	return nil
}

// OpenTemplate finds the state SaveTemplate kept in the instance's folder.
func (d *Driver) OpenTemplate(_ context.Context, name string) (drivers.ForkImage, error) {
	dir := d.instanceDir(name)
	states, err := filepath.Glob(filepath.Join(dir, "fork-*.state"))
	if err != nil {
		return nil, err
	}
	if len(states) != 1 {
		return nil, fmt.Errorf("%s is no memory template (%d saved states in its folder): %w", name, len(states),
			drivers.ErrNotFound)
	}
	tag := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(states[0]), "fork-"), ".state")
	f := &forkImage{d: d, dir: dir, base: "fork-base-" + tag + ".qcow2", state: filepath.Base(states[0])}
	if _, err := os.Stat(filepath.Join(dir, f.base)); err != nil {
		return nil, fmt.Errorf("memory template %s lacks its disk: %w", name, errors.Join(err, drivers.ErrNotFound))
	}
	return keptImage{f}, nil
}

// keptImage is a template's saved state: children start from it and it
// stays for the next.
type keptImage struct{ *forkImage }

func (keptImage) Release(context.Context) error { return nil }
