package plan

import (
	"reflect"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state/statefile"
)

// A VM's shape is declared by spec.VM ([vm], which each sandbox inlines,
// its Shape shared with pools) plus a sandbox's ports and network. Each of its keys reaches the driver's
// spec (vmSpec), is declared under its name by drivers.Spec and by the state
// file's record (statefile.VM, which keeps every drivers.Spec field:
// state's TestTheVMRecordKeepsEverySpecField), and is classified in
// drivers/specfields.go (changing it is seen). A key added to spec.VM fails
// here until each of them has it; the conversions copy it by name.
func TestEveryVMKeyReachesTheDriverAndTheStateFile(t *testing.T) {
	notTheVMs := map[string]string{
		"Driver":   "which backend makes the VM: the sandbox record's Driver",
		"TTL":      "the lease, not the VM",
		"Backends": "drivers.Spec.Backend, the tables of the sandbox's backend alone (BackendSettings)",
	}
	inDriverSpec := map[string]string{"Ports": "Ports", "Network": "Egress"}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[spec.VM]()) {
		if notTheVMs[f.Name] == "" && !f.Anonymous {
			inDriverSpec[f.Name] = f.Name
		}
	}
	host := spec.Host{OS: "linux", Arch: "amd64"}
	base := vmSpec("sbf-1-a", spec.Sandbox{}, "/ws", host)
	for key, name := range inDriverSpec {
		for _, in := range []reflect.Type{reflect.TypeFor[drivers.Spec](), reflect.TypeFor[statefile.VM]()} {
			if _, ok := in.FieldByName(name); !ok {
				t.Errorf("%s has no field %s for the sandbox key %s", in, name, key)
			}
		}
		var sb spec.Sandbox
		fill(reflect.ValueOf(&sb).Elem().FieldByName(key))
		got := vmSpec("sbf-1-a", sb, "/ws", host)
		if reflect.DeepEqual(got, base) {
			t.Errorf("the sandbox key %s does not reach the driver's spec", key)
		} else if len(drivers.DiffSpec(base, got, "")) == 0 {
			t.Errorf("changing %s is not classified in drivers/specfields.go", name)
		}
	}
}

// fill sets a value that is not its zero to every field.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64:
		v.SetInt(3)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	}
}
