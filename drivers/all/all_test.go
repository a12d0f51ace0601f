package all_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	_ "github.com/sandboxforge/sbf/drivers/all"
	"github.com/sandboxforge/sbf/internal/clock"
)

// Every backend registers itself the same way; the spec's enum, sbf
// init's comment and SANDBOX_BACKEND all read this list.
func TestEveryBackendIsRegistered(t *testing.T) {
	if got := drivers.Names(); !slices.Equal(got, []string{"hyperv", "kubevirt", "lima", "sim", "vz"}) {
		t.Fatalf("registered: %v", got)
	}
	env := drivers.Env{Getenv: func(string) string { return "" }, Clock: clock.Real{}, Workspace: t.TempDir(),
		StateDir: t.TempDir(), HostOS: "linux", HostArch: "amd64"}
	reg, _ := drivers.Lookup("sim")
	d, err := reg.New(context.Background(), env)
	if err != nil || !reg.TestOnly || !reg.PerWorkspace {
		t.Fatalf("sim: %v %+v", err, reg)
	}
	if _, err := d.List(context.Background()); err != nil {
		t.Errorf("sim list: %v", err)
	}
	for _, name := range []string{"vz", "hyperv"} {
		reg, _ := drivers.Lookup(name)
		var u *drivers.UnavailableError
		if _, err := reg.New(context.Background(), env); !errors.As(err, &u) || u.Driver != name {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, ok := drivers.Lookup("lmia"); ok {
		t.Error("a misspelt backend was found")
	}
}
