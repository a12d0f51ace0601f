// Package byname copies a struct into another that declares the same keys
// in its own layer (a spec table, a driver's spec, a state file record):
// one conversion for all of them, so a key added to each is carried
// without a line of copying.
package byname

import (
	"reflect"
	"sync"
)

// Copy sets each exported field of *dst from the field of src with the
// same name, where src has one (the fields of a struct src embeds count as
// its own): nested structs and pointers to them field by field, slices and
// maps as copies, nil ones left as *dst has them. Fields of one name are of
// one kind, and slices and maps of one type; the tests of each pair of
// types check it.
// src may be a pointer to the struct, which spares copying it into an
// interface.
func Copy(dst, src any) {
	sv := reflect.ValueOf(src)
	if sv.Kind() == reflect.Pointer {
		sv = sv.Elem()
	}
	into(reflect.ValueOf(dst).Elem(), sv)
}

// fieldPair is a field of a destination type and the index path of the
// field of the same name in a source type.
type fieldPair struct {
	dst int
	src []int
}

// pairs are the fields two struct types share by name, worked out once
// per pair of types: a plan converts every sandbox of a workspace.
var pairs sync.Map // [2]reflect.Type → []fieldPair

func pairsOf(dst, src reflect.Type) []fieldPair {
	key := [2]reflect.Type{dst, src}
	if p, ok := pairs.Load(key); ok {
		return p.([]fieldPair)
	}
	var out []fieldPair
	for i := range dst.NumField() {
		if f := dst.Field(i); f.IsExported() {
			if sf, ok := src.FieldByName(f.Name); ok {
				out = append(out, fieldPair{dst: i, src: sf.Index})
			}
		}
	}
	pairs.Store(key, out)
	return out
}

func into(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		for _, p := range pairsOf(dst.Type(), src.Type()) {
			into(dst.Field(p.dst), src.FieldByIndex(p.src))
		}
	case reflect.Pointer, reflect.Slice, reflect.Map:
		switch {
		case src.IsNil():
		case src.Kind() == reflect.Slice:
			dst.Set(reflect.AppendSlice(reflect.MakeSlice(dst.Type(), 0, src.Len()), src))
		case src.Kind() == reflect.Map:
			dst.Set(reflect.MakeMapWithSize(dst.Type(), src.Len()))
			for it := src.MapRange(); it.Next(); {
				dst.SetMapIndex(it.Key(), it.Value())
			}
		default:
			dst.Set(reflect.New(dst.Type().Elem()))
			into(dst.Elem(), src.Elem())
		}
	default:
		if src.Type() == dst.Type() {
			dst.Set(src)
		} else {
			dst.Set(src.Convert(dst.Type()))
		}
	}
}
