package state

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// Every field of a driver spec survives the state file's record of it,
// byte for byte in JSON: a field added to drivers.Spec fails here until
// the format learns it (a new optional field, or a new version). LeaseEnd
// is a create's, not the VM's: the record's lease is the sandbox's own.
func TestTheVMRecordKeepsEverySpecField(t *testing.T) {
	s := drivers.Spec{}
	fill(reflect.ValueOf(&s).Elem())
	s.LeaseEnd = nil
	back := SpecOf(RecordOf(s))
	if !reflect.DeepEqual(back, s) {
		t.Errorf("round trip lost fields:\n got %+v\nwant %+v", back, s)
	}
	spec, _ := json.Marshal(s)
	rec, _ := json.Marshal(RecordOf(s))
	if string(spec) != string(rec) {
		t.Errorf("the record's JSON is not the spec's:\n%s\n%s", rec, spec)
	}
}

// fill sets every field to a value that is not its zero.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x" + v.Type().Name())
	case reflect.Int:
		v.SetInt(3)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Field(i).CanSet() {
				continue // a time.Time's inside
			}
			fill(v.Field(i))
		}
	}
}
