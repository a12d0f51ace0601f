package hyperv

import (
	"testing"

	"github.com/sandboxforge/sbf/drivers/drivertest"
	"github.com/sandboxforge/sbf/drivers/hyperv/internal/fakehv"
)

// The driver keeps the engine's contract on the fake Windows host. A
// person's VMs there carry no marker (or someone else's Notes), whatever
// their name.
func TestContract(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) drivertest.World {
			f := newFake(t)
			foreignNotes := "my own VM; please leave it be"
			return drivertest.World{
				Driver:         f.driver(),
				MarksOwnership: true,
				AddForeign: func(t *testing.T, name string) {
					w := f.world()
					w.VMs = append(w.VMs, &fakehv.VM{Name: name, State: "Running", Notes: foreignNotes, Generation: 2,
						CPUs: 8, MemoryBytes: 8 * gibBytes})
					f.save(w)
				},
				ForeignExists: func(t *testing.T, name string) bool {
					for _, vm := range f.world().VMs {
						if vm.Name == name && vm.Notes == foreignNotes && vm.State == "Running" && vm.CPUs == 8 {
							return true
						}
					}
					return false
				},
			}
		},
		Spec: spec,
	})
}
