// Package byname copies a struct into another that declares the same keys
// in its own layer (a spec table, a driver's spec, a state file record):
// one conversion for all of them, so a key added to each is carried
// without a line of copying.
package byname

import "reflect"

// Copy sets each exported field of *dst from the field of src with the
// same name, where src has one (the fields of a struct src embeds count as
// its own): nested structs and pointers to them field by field, slices and
// maps as copies, nil ones left as *dst has them. Fields of one name are of
// one kind, and slices and maps of one type; the tests of each pair of
// types check it.
func Copy(dst, src any) { into(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)) }

func into(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		for i := range dst.NumField() {
			if f := dst.Type().Field(i); f.IsExported() && src.FieldByName(f.Name).IsValid() {
				into(dst.Field(i), src.FieldByName(f.Name))
			}
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
		dst.Set(src.Convert(dst.Type()))
	}
}
