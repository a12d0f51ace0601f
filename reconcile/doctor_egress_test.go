package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
)

// sbf doctor's next step for a policy the driver cannot enforce names the sandbox as the
// spec does ([sandboxes.api.network]), not its VM (sbf-<tag>-api), which no spec has.
func TestDoctorsNetworkNextStepNamesTheSandbox(t *testing.T) {
	root := t.TempDir()
	toml := "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.api.network]\negress = \"deny\"\n"
	if err := os.WriteFile(filepath.Join(root, spec.FileName), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := spec.Load(spec.Options{Root: root, Host: spec.Host{OS: "linux", Arch: "amd64"}, Backends: drivers.Linked})
	if err != nil {
		t.Fatal(err)
	}
	env := drivers.Env{Getenv: func(string) string { return "" }, StateDir: t.TempDir(), Workspace: root,
		HostOS: "linux", HostArch: "amd64", HostExec: true}
	var steps []string
	for _, d := range Diagnose(context.Background(), env, r) {
		for _, c := range d.Checks {
			if c.Name == "network policy" {
				steps = c.NextSteps
				if !strings.HasPrefix(c.Detail, "api: ") {
					t.Errorf("the check's detail names %q; want the sandbox", c.Detail)
				}
			}
		}
	}
	if len(steps) != 2 || !strings.Contains(steps[1], "[sandboxes.api.network]") {
		t.Errorf("next steps %q; want [sandboxes.api.network]", steps)
	}
}
