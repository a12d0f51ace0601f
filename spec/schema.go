package spec

import (
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
)

// field is one key of a table, read from the Config struct tags. The
// validator, the decoder and the JSON Schema all walk these, so the struct
// is the single definition of the file format.
type field struct {
	key      string
	index    []int
	typ      reflect.Type
	enum     []string
	checks   []string
	nullable bool
	// managedOnly keys are written by sbf into the managed overrides
	// document and rejected anywhere else.
	managedOnly bool
	doc         string
	// drivers: the value names a backend (enum:"@drivers"); the linked
	// ones are read when asked, as a test may link one after fieldsOf ran.
	drivers bool
}

// values are what an enum key may be: for a backend, auto and the
// backends this build links.
func (f field) values(b Backends) []string {
	if f.drivers {
		return append([]string{"auto"}, orNone(b).Names()...)
	}
	return f.enum
}

func (f field) has(check string) bool {
	for _, c := range f.checks {
		if c == check {
			return true
		}
	}
	return false
}

var (
	durationType = reflect.TypeFor[Duration]()
	timeType     = reflect.TypeFor[time.Time]()
	secretType   = reflect.TypeFor[Secret]()
	envType      = reflect.TypeFor[Env]()
)

var fieldCache sync.Map // reflect.Type → []field

// fieldsOf lists a struct's keys in declaration order; embedded structs
// tagged `toml:",inline"` contribute their keys as if declared in place
// (tagged `defaults:"TABLE"`, their docs say which table they default to).
func fieldsOf(t reflect.Type) []field {
	if cached, ok := fieldCache.Load(t); ok {
		return cached.([]field)
	}
	var out []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		if sf.Anonymous && name == "" {
			from := sf.Tag.Get("defaults") // the table its keys default to (a pool's: [vm])
			for _, inner := range fieldsOf(sf.Type) {
				inner.index = append([]int{i}, inner.index...)
				if from != "" {
					inner.doc += " Default: [" + from + "] " + inner.key + "."
				}
				out = append(out, inner)
			}
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		f := field{
			key:         name,
			index:       []int{i},
			typ:         sf.Type,
			doc:         sf.Tag.Get("doc"),
			nullable:    sf.Tag.Get("nullable") == "true",
			managedOnly: sf.Tag.Get("managed") == "true",
		}
		if e := sf.Tag.Get("enum"); e == "@drivers" {
			f.drivers = true
		} else if e != "" {
			f.enum = strings.Split(e, ",")
		}
		if c := sf.Tag.Get("check"); c != "" {
			f.checks = strings.Split(c, ",")
		}
		out = append(out, f)
	}
	fieldCache.Store(t, out)
	return out
}

func lookupField(t reflect.Type, key string) (field, bool) {
	for _, f := range fieldsOf(t) {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

func allowedKeys(t reflect.Type, b Backends) string {
	fs := fieldsOf(t)
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	keys = append(keys, tableBackends(t, b)...)
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
