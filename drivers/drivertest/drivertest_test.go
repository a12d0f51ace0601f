package drivertest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/drivertest"
	"github.com/sandboxforge/sbf/drivers/sim"
)

// broken is the sim with one contract rule broken on purpose.
type broken struct {
	*sim.Driver
	bug     string
	foreign []string
}

func (b *broken) List(ctx context.Context) ([]drivers.Instance, error) {
	list, err := b.Driver.List(ctx)
	for i := range list {
		if b.bug == "misreports-memory" {
			list[i].Reported.MemoryGiB += 1.0 / 1024 // rounded to the next MiB, say
		}
	}
	if b.bug == "lists-foreign" {
		for _, n := range b.foreign {
			list = append(list, drivers.Instance{Name: n, Status: drivers.Stopped})
		}
	}
	return list, err
}

func (b *broken) Start(ctx context.Context, s drivers.Spec) error {
	if b.bug == "start-creates" {
		b.Driver.Create(ctx, s)
	}
	return b.Driver.Start(ctx, s)
}

func (b *broken) Delete(ctx context.Context, name string) error {
	err := b.Driver.Delete(ctx, name)
	if b.bug == "delete-missing-fails" && errors.Is(err, drivers.ErrNotFound) {
		return fmt.Errorf("no such VM %s", name) // the cause is lost
	}
	return err
}

func (b *broken) Claim(ctx context.Context, name string, o drivers.Owner) error {
	if b.bug == "claim-overwrites" {
		os.Remove(filepath.Join(b.Driver.Dir(), "labels", name, drivers.OwnerLabelFile))
	}
	return b.Driver.Claim(ctx, name, o)
}

func (b *broken) Create(ctx context.Context, s drivers.Spec) error {
	if b.bug == "create-overwrites" {
		b.Driver.Delete(ctx, s.Name)
	}
	return b.Driver.Create(ctx, s)
}

// TestBrokenDriver runs the suite on a broken driver when the parent test
// asks for it (CONTRACT_BUG); alone it does nothing.
func TestBrokenDriver(t *testing.T) {
	bug := os.Getenv("CONTRACT_BUG")
	if bug == "" {
		t.Skip("run by TestSuiteCatchesBrokenDrivers")
	}
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) drivertest.World {
			d, err := sim.New(sim.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			b := &broken{Driver: d, bug: bug}
			return drivertest.World{Driver: b,
				AddForeign:    func(_ *testing.T, name string) { b.foreign = append(b.foreign, name) },
				ForeignExists: func(*testing.T, string) bool { return true }}
		},
		Spec: func(name string) drivers.Spec {
			return drivers.Spec{Name: name, CPUs: 1, MemoryGiB: 2, DiskGiB: 10}
		},
	})
}

// Each broken rule fails the suite, naming what broke.
func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	for bug, want := range map[string]string{
		"":                     "", // the unbroken sim passes
		"misreports-memory":    "reports 2.0009765625 GiB of memory; asked for 2",
		"lists-foreign":        "List reports default, which sbf did not create",
		"start-creates":        "Start of an instance that does not exist succeeded",
		"delete-missing-fails": "want success or an error wrapping drivers.ErrNotFound",
		"create-overwrites":    "List reports sbf-c0ffee00-contract stopped; want running",
		"claim-overwrites":     "of sbf-pool-0123abcd-2 won",
	} {
		t.Run("bug="+bug, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenDriver$", "-test.v")
			cmd.Env = append(os.Environ(), "CONTRACT_BUG="+bug)
			if bug == "" {
				cmd.Env = append(cmd.Env, "CONTRACT_BUG=none")
			}
			out, err := cmd.CombinedOutput()
			switch {
			case want == "" && err != nil:
				t.Fatalf("the suite fails the working sim: %v\n%s", err, out)
			case want != "" && err == nil:
				t.Fatalf("the suite passed a driver with bug %s:\n%s", bug, out)
			case !strings.Contains(string(out), want):
				t.Errorf("bug %s: the failure does not say %q:\n%s", bug, want, out)
			}
		})
	}
}
