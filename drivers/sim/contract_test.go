package sim

import (
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/drivertest"
)

// The sim stands in for real backends in the engine's tests, so it keeps
// the same contract they do.
func TestContract(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) drivertest.World {
			d, err := New(Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			return drivertest.World{Driver: d}
		},
		Spec: func(name string) drivers.Spec {
			return drivers.Spec{Name: name, CPUs: 2, MemoryGiB: 2, DiskGiB: 10, Arch: "x86_64", VMType: "qemu"}
		},
	})
}
