package drivers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEnvDuration(t *testing.T) {
	env := Env{Getenv: func(k string) string {
		return map[string]string{"GOOD": "90s", "ZERO": "0s", "BAD": "soon"}[k]
	}}
	if d, err := env.Duration("GOOD", "5m"); d != 90*time.Second || err != nil {
		t.Errorf("GOOD: %v %v", d, err)
	}
	if d, err := env.Duration("UNSET", "5m"); d != 0 || err != nil {
		t.Errorf("unset: %v %v", d, err)
	}
	for _, key := range []string{"ZERO", "BAD"} {
		if _, err := env.Duration(key, "5m"); err == nil || !strings.Contains(err.Error(), key+"=") ||
			!strings.Contains(err.Error(), "such as 5m") {
			t.Errorf("%s: %v", key, err)
		}
	}
}

func TestDiagnoseWithReportsUnreadableSettings(t *testing.T) {
	diagnose := DiagnoseWith("x", func(Env) (int, error) { return 0, errors.New("X_TIMEOUT is malformed") },
		func(context.Context, int, []Spec) Diagnosis {
			t.Fatal("diagnosed with unreadable settings")
			return Diagnosis{}
		})
	d := diagnose(context.Background(), Env{}, nil)
	if d.Usable || len(d.Checks) != 1 || !strings.Contains(d.Checks[0].Detail, "X_TIMEOUT") {
		t.Errorf("%+v", d)
	}
}

// What a spec may say about a backend is what its registration says
// (Linked), and a registration a spec could not say is refused.
func TestRegisterRefusesWhatASpecCouldNotSay(t *testing.T) {
	newDriver := func(context.Context, Env) (Driver, error) { return nil, nil }
	Register(Registration{Name: "regtest", New: newDriver, SettingsDoc: "table",
		Settings: []Setting{{Key: "zone", Doc: "where"}, {Key: "class"}}})
	keys, doc, ok := Linked.Table("regtest")
	if !ok || doc != "table" || !slices.Equal(slices.Sorted(maps.Keys(keys)), []string{"class", "zone"}) ||
		keys["zone"] != "where" || !slices.Contains(Linked.Names(), "regtest") {
		t.Fatalf("%v %q %v %v", keys, doc, ok, Linked.Names())
	}
	if _, _, ok := Linked.Table("regtset"); ok {
		t.Error("a backend never registered is linked")
	}
	for _, bad := range []Registration{{Name: "regtest"}, {Name: "auto"}, {Name: "Upper"}, {Name: ""},
		{Name: "lima.vz"}, {Name: "keys", Settings: []Setting{{Key: "a b"}}},
		{Name: "dups", Settings: []Setting{{Key: "a"}, {Key: "a"}}}, {Name: "nonew", New: nil}} {
		if bad.Name != "nonew" {
			bad.New = newDriver
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("registered %+v", bad)
				}
			}()
			Register(bad)
		}()
	}
}

// "auto" is the registered backend ranking a host highest, with its
// vm_type; a backend's commands are offered once each, by name.
func TestAutoRankAndCommands(t *testing.T) {
	newDriver := func(context.Context, Env) (Driver, error) { return nil, nil }
	run := func(context.Context, []string) error { return nil }
	Register(Registration{Name: "autotest", New: newDriver,
		AutoRank: func(os, _ string) int { return map[string]int{"plan9": 9}[os] },
		VMType:   func(os, arch string) string { return os + "/" + arch },
		Commands: []Command{{Name: "autotest-run", Args: 1, Run: run}}})
	if backend, vmType := Linked.Auto("plan9", "mips"); backend != "autotest" || vmType != "plan9/mips" {
		t.Errorf("auto on plan9 = %q %q", backend, vmType)
	}
	if backend, vmType := Auto("aix", "ppc64"); backend == "autotest" || vmType == "aix/ppc64" {
		t.Errorf("a backend ranking a host 0 is its auto: %q %q", backend, vmType)
	}
	if !slices.ContainsFunc(Commands(), func(c Command) bool { return c.Name == "autotest-run" && c.Args == 1 }) {
		t.Errorf("commands %v", Commands())
	}
	for i, bad := range [][]Command{{{Name: "autotest-run", Run: run}}, {{Name: "norun"}}, {{Name: "a b", Run: run}},
		{{Name: "", Run: run}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("registered the commands %+v", bad)
				}
			}()
			Register(Registration{Name: fmt.Sprint("badcmd", i), New: newDriver, Commands: bad})
		}()
	}
}
