package drivers

import (
	"context"
	"reflect"
	"testing"
)

// copier is a backend with two capabilities beyond the lifecycle.
type copier struct{ Driver }

func (copier) CopyIn(context.Context, string, string, string) error { return nil }
func (copier) Remove(context.Context, string, []string) error       { return nil }

// remover is a backend that removes guest paths alone.
type remover struct{ Driver }

func (remover) Remove(context.Context, string, []string) error { return nil }

// Capabilities are found from the type alone: each field is an optional
// interface (or HostShell's answer), so CapabilitiesOf fills any field
// added to the struct without another list to keep in step.
func TestCapabilitiesComeFromTheType(t *testing.T) {
	ct := reflect.TypeFor[Capabilities]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if f.Name != "HostShell" && (f.Type.Kind() != reflect.Interface || f.Type.NumMethod() == 0) {
			t.Errorf("capability %s is %s, not an optional interface", f.Name, f.Type)
		}
	}
	// Asked again, and after another type, each type has its own (the answer is kept by type).
	for _, d := range []Driver{(*copier)(nil), (*remover)(nil), (*copier)(nil)} {
		v := reflect.ValueOf(CapabilitiesOf(d))
		for i := range v.NumField() {
			name, set := ct.Field(i).Name, !v.Field(i).IsZero()
			if _, isCopier := d.(*copier); set != (name == "Remove" || isCopier && name == "CopyIn") {
				t.Errorf("%T %s: set = %v", d, name, set)
			}
		}
	}
	if CapabilitiesOf(nil) != (Capabilities{}) {
		t.Error("nothing has capabilities")
	}
}
