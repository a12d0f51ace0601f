package all_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/spec"
)

// toy is a backend as small as one can be: the lifecycle and commands. It
// registers itself as a backend package's register.go does; linking this
// file is the "one import line".
type toy struct{}

func (*toy) List(context.Context) ([]drivers.Instance, error) { return nil, nil }
func (*toy) Create(context.Context, drivers.Spec) error       { return nil }
func (*toy) Start(context.Context, drivers.Spec) error        { return nil }
func (*toy) Stop(context.Context, string) error               { return nil }
func (*toy) Delete(context.Context, string) error             { return nil }
func (*toy) Reconfigure(context.Context, drivers.Spec) error  { return nil }
func (*toy) Exec(context.Context, string, drivers.ExecRequest) (drivers.ExecResult, error) {
	return drivers.ExecResult{}, nil
}

func init() {
	drivers.Register(drivers.Registration{
		Name:        "toy",
		TestOnly:    true,
		Zero:        (*toy)(nil),
		SettingsDoc: "What the toy backend makes its VMs from.",
		Settings: []drivers.Setting{
			{Key: "flavour", Doc: "The VM's flavour.", Effect: drivers.Replace},
			{Key: "zone", Doc: "Where it runs.", Effect: drivers.Restart},
		},
		V1:  drivers.V1Import{Backends: []string{"toyv1"}, ListsEveryName: true},
		New: func(context.Context, drivers.Env) (drivers.Driver, error) { return &toy{}, nil },
	})
}

// Adding a backend is its package plus one import line: with nothing else
// edited, the toy's registration gives it its capabilities (from its type),
// its name in the spec's driver enum and JSON Schema (drivers.Linked), its
// settings table (validated with positions, merged, handed to the driver
// with the effect of each change) and its v1 import mapping.
func TestABackendIsItsPackagePlusOneImportLine(t *testing.T) {
	reg, ok := drivers.Lookup("toy")
	if caps := drivers.CapabilitiesOf(reg.Zero); !ok || caps.Exec == nil || caps.Snapshots != nil {
		t.Fatalf("toy: %+v", reg)
	}
	load := func(doc string) (*spec.Resolved, error) {
		ws := t.TempDir()
		if err := os.WriteFile(filepath.Join(ws, spec.FileName), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return spec.Load(spec.Options{Root: ws, Host: spec.Host{OS: "linux", Arch: "amd64"}, Backends: drivers.Linked})
	}
	r, err := load("[vm]\ndriver = \"toy\"\n[vm.toy]\nflavour = \"mint\"\n\n" +
		"[sandboxes.a]\n[sandboxes.b.toy]\nzone = \"z\"\n")
	if err != nil || len(r.Warnings) != 0 {
		t.Fatalf("%v %v", err, r.Warnings)
	}
	d := plan.DesiredFrom(r)
	a, b := d.Sandboxes["a"], d.Sandboxes["b"]
	if a.Driver != "toy" || len(a.VM.Backend) != 1 || a.VM.Backend["flavour"] != "mint" || b.VM.Backend["zone"] != "z" {
		t.Errorf("desired a = %+v, b = %+v", a.VM, b.VM)
	}
	for _, c := range []struct {
		settings map[string]string
		effect   drivers.Effect
	}{{map[string]string{"flavour": "lime", "zone": "z"}, drivers.Replace}, {map[string]string{"flavour": "mint"},
		drivers.Restart}} {
		want := b.VM
		want.Backend = c.settings
		if got := drivers.DiffSpec(b.VM, want, "toy"); len(got) != 1 || got[0].Effect != c.effect {
			t.Errorf("%v → %v: %v", b.VM.Backend, c.settings, got)
		}
	}
	_, err = load("[vm]\ndriver = \"toy\"\n[vm.toy]\nflavor = \"mint\"\n")
	if err == nil || !strings.Contains(err.Error(), ":4:1: vm.toy.flavor: is not supported (allowed: flavour, zone)") {
		t.Errorf("misspelt setting: %v", err)
	}
	raw, err := spec.JSONSchema(drivers.Linked)
	var schema struct {
		Properties struct {
			VM struct {
				Properties map[string]struct {
					Enum       []string       `json:"enum"`
					Properties map[string]any `json:"properties"`
				} `json:"properties"`
			} `json:"vm"`
		} `json:"properties"`
	}
	if err != nil || json.Unmarshal(raw, &schema) != nil {
		t.Fatal(err)
	}
	vm := schema.Properties.VM.Properties
	if !slices.Contains(vm["driver"].Enum, "toy") || vm["toy"].Properties["flavour"] == nil {
		t.Errorf("schema: driver %v, toy %v", vm["driver"], vm["toy"])
	}
	if drivers.V1Backends()["toyv1"] != "toy" {
		t.Errorf("v1 backends: %v", drivers.V1Backends())
	}
}
