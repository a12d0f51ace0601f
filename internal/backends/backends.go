// Package backends is what a workspace file may say about each backend
// this build links: its name (a value of [vm] driver) and its own settings
// table ([vm.NAME], [sandboxes.S.NAME]). Each backend's registration
// (drivers.Register) feeds it and the spec package reads it: it sits below
// both because a spec never links a backend (internal/layering) yet must
// know the keys of every backend that is linked, so adding a backend edits
// neither.
package backends

import (
	"slices"
	"strings"
	"sync"

	"github.com/sandboxforge/sbf/internal/names"
)

// Info is one backend as a spec sees it.
type Info struct {
	Name     string
	TestOnly bool // never a default; docs name it apart
	// Doc describes the settings table, for the JSON Schema.
	Doc string
	// Settings are the table's keys, in the order the backend declares
	// them; every value is a string (drivers.Spec.Backend).
	Settings []Setting
}

// Setting is one key of a backend's table.
type Setting struct {
	Key string
	Doc string
}

// Setting finds one of the table's keys.
func (i Info) Setting(key string) (Setting, bool) {
	for _, s := range i.Settings {
		if s.Key == key {
			return s, true
		}
	}
	return Setting{}, false
}

// Keys are the table's keys, sorted.
func (i Info) Keys() []string {
	out := make([]string, len(i.Settings))
	for n, s := range i.Settings {
		out[n] = s.Key
	}
	slices.Sort(out)
	return out
}

const maxName = 32

// ValidName reports whether name could name a backend, linked or not: a
// bare TOML key, lower case and starting with a letter, so a table header
// names it unquoted and values are compared lower-cased.
func ValidName(name string) bool {
	return len(name) <= maxName && names.Words(name, true) && name[0] >= 'a' && name[0] <= 'z'
}

// ValidKey reports whether key could be a backend setting's key: a bare
// TOML key, which resolved configurations render as is.
func ValidKey(key string) bool { return len(key) <= 64 && names.Key(key) }

var registry = struct {
	sync.RWMutex
	m map[string]Info
}{m: map[string]Info{}}

// Register adds a backend. A bad name or key, or a name registered twice,
// is a programming error.
func Register(i Info) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[i.Name]; dup || !ValidName(i.Name) || i.Name == "auto" {
		panic("backends: bad or duplicate backend name " + i.Name)
	}
	for n, s := range i.Settings {
		if !ValidKey(s.Key) || slices.ContainsFunc(i.Settings[:n], func(o Setting) bool { return o.Key == s.Key }) {
			panic("backends: bad or duplicate setting " + i.Name + "." + s.Key)
		}
	}
	i.Settings = slices.Clone(i.Settings)
	registry.m[i.Name] = i
}

// Lookup finds a linked backend.
func Lookup(name string) (Info, bool) {
	registry.RLock()
	defer registry.RUnlock()
	i, ok := registry.m[name]
	return i, ok
}

// Names lists the linked backends, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.m))
	for n := range registry.m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// WithSettings lists the linked backends that have a settings table,
// sorted.
func WithSettings() []Info {
	registry.RLock()
	defer registry.RUnlock()
	var out []Info
	for _, i := range registry.m {
		if len(i.Settings) > 0 {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out
}
