package all_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	_ "github.com/sandboxforge/sbf/drivers/all"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
)

// Every backend registers itself the same way; the spec's enum, sbf
// init's comment and SANDBOX_BACKEND all read this list.
func TestEveryBackendIsRegistered(t *testing.T) {
	if got := drivers.Names(); !slices.Equal(got, []string{"hyperv", "kubevirt", "lima", "sim", "vz"}) {
		t.Fatalf("registered: %v", got)
	}
	for _, name := range drivers.Names() {
		if !slices.Contains(spec.Drivers, name) {
			t.Errorf("the linked backend %s is not one a spec may name (spec.Drivers)", name)
		}
	}
	env := drivers.Env{Getenv: func(string) string { return "" }, Clock: clock.Real{}, Workspace: t.TempDir(),
		StateDir: t.TempDir(), HostOS: "linux", HostArch: "amd64"}
	reg, _ := drivers.Lookup("sim")
	// The sim runs guest commands on this host: only the operator's
	// SBF_ENABLE_SIM=1 (Env.HostExec) lets it run, whatever a spec says.
	var u *drivers.UnavailableError
	if _, err := reg.New(context.Background(), env); !errors.As(err, &u) ||
		!strings.Contains(u.Error(), "SBF_ENABLE_SIM=1") {
		t.Fatalf("sim without the operator's leave: %v", err)
	}
	if d := reg.Diagnose(context.Background(), env, nil); d.Usable {
		t.Errorf("sim diagnosed usable without the operator's leave: %+v", d)
	}
	env.HostExec = true
	d, err := reg.New(context.Background(), env)
	if err != nil || !reg.TestOnly || !reg.PerWorkspace {
		t.Fatalf("sim: %v %+v", err, reg)
	}
	if entries, _ := os.ReadDir(env.Workspace); len(entries) != 0 {
		t.Errorf("the sim's world is inside the workspace: %v", entries)
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
