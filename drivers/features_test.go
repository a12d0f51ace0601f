package drivers

import (
	"reflect"
	"slices"
	"testing"
)

// Every capability is a feature a registration can declare, under the
// same name, and every feature has a name to report.
func TestEveryCapabilityIsAFeature(t *testing.T) {
	ct, ft := reflect.TypeFor[Capabilities](), reflect.TypeFor[Features]()
	if ct.NumField() != ft.NumField() {
		t.Fatalf("%d capabilities, %d features", ct.NumField(), ft.NumField())
	}
	var names []string
	for i := range ct.NumField() {
		f := ft.Field(i)
		if ct.Field(i).Name != f.Name || f.Tag.Get("feature") == "" || slices.Contains(names, f.Tag.Get("feature")) {
			t.Errorf("capability %s, feature %s %q", ct.Field(i).Name, f.Name, f.Tag.Get("feature"))
		}
		names = append(names, f.Tag.Get("feature"))
	}
	all := Features{}
	v := reflect.ValueOf(&all).Elem()
	for i := range v.NumField() {
		v.Field(i).SetBool(true)
	}
	if got := all.List(); !slices.Equal(got, names) {
		t.Errorf("List = %v", got)
	}
	if (Capabilities{}).Features() != (Features{}) || CapabilitiesOf(nil).Features() != (Features{}) {
		t.Error("nothing has features")
	}
}
