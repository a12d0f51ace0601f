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
	c := CapabilitiesOf((*copier)(nil))
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		name, set := ct.Field(i).Name, !v.Field(i).IsZero()
		if set != (name == "CopyIn" || name == "Remove") {
			t.Errorf("%s: set = %v", name, set)
		}
	}
	if CapabilitiesOf(nil) != (Capabilities{}) {
		t.Error("nothing has capabilities")
	}
}
