package backends

import (
	"slices"
	"testing"
)

func TestRegisterRefusesWhatASpecCouldNotSay(t *testing.T) {
	Register(Info{Name: "regtest", Settings: []Setting{{Key: "zone"}, {Key: "class"}}})
	i, ok := Lookup("regtest")
	if !ok || !slices.Equal(i.Keys(), []string{"class", "zone"}) || !slices.Contains(Names(), "regtest") {
		t.Fatalf("%+v %v", i, Names())
	}
	if _, ok := i.Setting("zone"); !ok {
		t.Error("zone not found")
	}
	if !slices.ContainsFunc(WithSettings(), func(i Info) bool { return i.Name == "regtest" }) {
		t.Error("a backend with settings is not listed")
	}
	for _, bad := range []Info{{Name: "regtest"}, {Name: "auto"}, {Name: "Upper"}, {Name: ""},
		{Name: "keys", Settings: []Setting{{Key: "a b"}}}, {Name: "dups", Settings: []Setting{{Key: "a"}, {Key: "a"}}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("registered %+v", bad)
				}
			}()
			Register(bad)
		}()
	}
	if !ValidName("kube-virt2") || ValidName("lima.vz") || ValidName("-x") {
		t.Error("ValidName")
	}
}
