package lima

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/drivertest"
)

// The Lima driver keeps the engine's contract against a fake limactl that
// keeps instances as limactl 1.2.1 does (testdata/fake-limactl).
func TestContract(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) drivertest.World {
			f := newFake(t)
			home := filepath.Join(f.dir, "home")
			if err := os.Mkdir(home, 0o755); err != nil {
				t.Fatal(err)
			}
			f.env["LIMA_HOME"] = home
			// The fake is a shell script: `limactl start` gets this PATH
			// (after the emulation wrappers) and must still find sed.
			f.env["PATH"] += string(os.PathListSeparator) + os.Getenv("PATH")
			foreignYAML := "vmType: vz\narch: aarch64\ncpus: 4\nmemory: 4GiB\ndisk: 100GiB\n"
			return drivertest.World{
				Driver:  f.driver(),
				Imports: true,
				AddForeign: func(t *testing.T, name string) {
					dir := filepath.Join(home, name)
					os.Mkdir(dir, 0o755)
					os.WriteFile(filepath.Join(dir, "status"), []byte("Stopped\n"), 0o644)
					if err := os.WriteFile(filepath.Join(dir, "lima.yaml"), []byte(foreignYAML), 0o644); err != nil {
						t.Fatal(err)
					}
				},
				ForeignExists: func(t *testing.T, name string) bool {
					data, err := os.ReadFile(filepath.Join(home, name, "lima.yaml"))
					return err == nil && string(data) == foreignYAML
				},
			}
		},
		Spec: func(name string) drivers.Spec {
			return drivers.Spec{Name: name, CPUs: 2, MemoryGiB: 2, DiskGiB: 10, VMType: "qemu", Arch: "x86_64",
				Image: drivers.Image{Location: "/img/disk.img"}}
		},
	})
}
