package vz

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/drivertest"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
)

// TestContract runs the engine's contract against everything of vz but
// the framework: real folders, images, seeds and supervisors (in this
// process, over their real control sockets), fake machines, and guests
// that are an SSH server on the loopback.
func TestContract(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) drivertest.World {
			w := newWorld(t)
			foreign := func(name string) string { return filepath.Join(w.d.Dir(), name, layout.DiskFile) }
			return drivertest.World{
				Driver: w.d,
				// Another tool's VM folder beside sbf's.
				AddForeign: func(t *testing.T, name string) {
					if err := os.MkdirAll(filepath.Dir(foreign(name)), 0o700); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(foreign(name), []byte("another tool's disk"), 0o600); err != nil {
						t.Fatal(err)
					}
				},
				ForeignExists: func(t *testing.T, name string) bool {
					b, err := os.ReadFile(foreign(name))
					return err == nil && string(b) == "another tool's disk"
				},
			}
		},
		Spec: func(name string) drivers.Spec {
			s := testSpec("contract")
			s.Name = name
			return s
		},
	})
}
