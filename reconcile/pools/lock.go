package pools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
)

// poolLockName is the host-wide lock every claim of a spare (adoption,
// retirement) is made under, in the host state folder.
const poolLockName = "pool.lock"

// lockPool takes the host-wide pool lock; with no host folder there is
// none (each claim is still atomic on its own).
func lockPool(ctx context.Context, dir string, who flock.Holder) (func(), error) {
	if dir == "" {
		return func() {}, nil
	}
	if err := ownfile.At(dir).Make(); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	l, err := flock.Acquire(ctx, ownfile.At(dir).File(poolLockName), who, 2*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("waiting for the host-wide pool lock: %w", err)
	}
	return func() { l.Release() }, nil
}

// Claim writes an owner label under the host-wide pool lock.
func Claim(
	ctx context.Context,
	dir string,
	who flock.Holder,
	lab drivers.Labeler,
	instance string,
	o drivers.Owner,
) error {
	release, err := lockPool(ctx, dir, who)
	if err != nil {
		return err
	}
	defer release()
	return lab.Claim(ctx, instance, o)
}

// Retire claims a spare for nobody, so no adopter takes it meanwhile, and
// says whether it may be deleted now: one a sandbox adopted since it was
// seen is its owner's, one gone needs nothing.
func Retire(
	ctx context.Context,
	lab drivers.Labeler,
	hostDir string,
	who flock.Holder,
	now time.Time,
	instance string,
) (bool, error) {
	err := Claim(ctx, hostDir, who, lab, instance, drivers.Owner{Retired: true, Since: now.UTC()})
	switch {
	case errors.Is(err, drivers.ErrOwned):
		drivers.Progressf(ctx, "%s was adopted meanwhile; it is its sandbox's now", instance)
		return false, nil
	case errors.Is(err, drivers.ErrNotFound):
		return false, nil
	}
	return err == nil, err
}
