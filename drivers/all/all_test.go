package all_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	_ "github.com/sandboxforge/sbf/drivers/all"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
)

// testEnv builds backends in throwaway folders with nothing set, the sim
// allowed: what a backend that needs no host program builds from.
func testEnv(t *testing.T) drivers.Env {
	return drivers.Env{Getenv: func(string) string { return "" }, Clock: clock.Real{}, Workspace: t.TempDir(),
		StateDir: t.TempDir(), HostOS: "linux", HostArch: "amd64", HostExec: true}
}

// Every backend package registers itself when imported, and all.go
// imports every one: a package under drivers/ that calls drivers.Register
// and is missing here would be a backend no binary links. Nothing lists
// backends by name: adding one is its package plus its import line.
func TestEveryBackendIsLinked(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "all.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var imported []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		imported = append(imported, p)
	}
	registering, _ := filepath.Glob("../*/*.go")
	for _, file := range registering {
		if strings.HasSuffix(file, "_test.go") || strings.Contains(file, "/drivertest/") {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		pkg := "github.com/sandboxforge/sbf/drivers/" + filepath.Base(filepath.Dir(file))
		if strings.Contains(string(data), "drivers.Register(") && !slices.Contains(imported, pkg) {
			t.Errorf("%s registers a backend, but all.go does not import %s", file, pkg)
		}
	}
	if len(drivers.Names()) < 2 {
		t.Fatalf("registered: %v", drivers.Names())
	}
	if _, ok := drivers.Lookup("lmia"); ok {
		t.Error("a misspelt backend was found")
	}
}

// What a backend can do is known from its registration's Zero without
// building it (the exec broker asks so), so Zero is of the type New builds:
// checked on the backends New builds here (the sim).
func TestZeroIsTheTypeNewBuilds(t *testing.T) {
	for _, name := range drivers.Names() {
		reg, _ := drivers.Lookup(name)
		if reg.Zero == nil {
			t.Errorf("%s: the registration has no Zero to say what it can do", name)
		}
		d, err := reg.New(context.Background(), testEnv(t))
		var u *drivers.UnavailableError
		switch {
		case err == nil:
			if reflect.TypeOf(d) != reflect.TypeOf(reg.Zero) {
				t.Errorf("%s: New built a %T, its Zero is a %T", name, d, reg.Zero)
			}
			if c, ok := d.(io.Closer); ok {
				c.Close()
			}
		case !errors.As(err, &u):
			t.Errorf("%s: New failed without saying why it cannot run here: %v", name, err)
		}
	}
}

// The v1 import mapping of every registration is one a spec can say: an
// imported VM is declared with its vm_type, and v1's backend names map to
// one backend each.
func TestV1ImportMappingsAreDeclarable(t *testing.T) {
	seen := map[string]string{}
	for _, name := range drivers.Names() {
		reg, _ := drivers.Lookup(name)
		for _, v1 := range reg.V1.Backends {
			if other, dup := seen[v1]; dup {
				t.Errorf("v1's backend %s maps to both %s and %s", v1, other, name)
			}
			seen[v1] = name
		}
		for _, vt := range reg.V1.VMTypes {
			ws := t.TempDir()
			doc := "[vm]\ndriver = \"" + name + "\"\nvm_type = \"" + vt + "\"\n"
			if err := os.WriteFile(filepath.Join(ws, spec.FileName), []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := spec.Options{Root: ws, Host: spec.Host{OS: "linux"}, Backends: drivers.Linked}
			if _, err := spec.Load(opts); err != nil {
				t.Errorf("%s imports VMs of vm_type %s, which a spec cannot say: %v", name, vt, err)
			}
		}
	}
	if got := drivers.V1Backends(); got["lima"] != "lima" || got["hyperv"] != "hyperv" {
		t.Errorf("v1's backends map to %v", got)
	}
}

// The sim runs guest commands on this host: only the operator's
// SBF_ENABLE_SIM=1 (Env.HostExec) lets it run, whatever a spec says; vz
// and hyperv say why they cannot run on this host.
func TestSimNeedsTheOperatorsLeave(t *testing.T) {
	env := testEnv(t)
	env.HostExec = false
	reg, _ := drivers.Lookup("sim")
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
}
