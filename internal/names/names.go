// Package names holds the rules for the names sbf checks on every run
// (sandboxes, snapshots, variables, backends), written out by hand: as
// regular expressions they cost each `sbf exec` ~0.1 ms to compile, the
// bounded repetitions ({0,63}) most. names_test.go checks each rule
// against the regular expression it replaces.
package names

import "strings"

// MaxSnapshot bounds a snapshot's name: it becomes a file name or a QEMU
// tag, and is repeated in every answer about it.
const MaxSnapshot = 64

// Snapshot reports whether name may name a snapshot: 1 to 64 letters,
// digits, '.', '-' and '_', starting with a letter or digit, so it is
// never a path (no separator, no "..") nor an option ("-x").
func Snapshot(name string) bool {
	if name == "" || len(name) > MaxSnapshot || !alnum(name[0]) || strings.Contains(name, "..") {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '.' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// EnvVar reports whether s is a shell variable's name:
// [A-Za-z_][A-Za-z0-9_]*.
func EnvVar(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !alnum(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

// OnlyReferences reports whether s is one or more ${VAR} and nothing else.
func OnlyReferences(s string) bool {
	if s == "" {
		return false
	}
	for s != "" {
		rest, ok := strings.CutPrefix(s, "${")
		end := strings.IndexByte(rest, '}')
		if !ok || end < 0 || !EnvVar(rest[:end]) {
			return false
		}
		s = rest[end+1:]
	}
	return true
}

// WordsPattern is Words' rule (lower unset) as JSON Schema writes it.
const WordsPattern = `^[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*$`

// Words reports whether s is words of letters and digits joined by single
// '_' or '-': [A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*, without capitals when
// lower is set.
func Words(s string, lower bool) bool {
	if s == "" {
		return false
	}
	afterWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '_' || c == '-':
			if !afterWord {
				return false
			}
			afterWord = false
		case alnum(c) && !(lower && c >= 'A' && c <= 'Z'):
			afterWord = true
		default:
			return false
		}
	}
	return afterWord
}

// Key reports whether s is a bare TOML key: [A-Za-z0-9_-]+.
func Key(s string) bool {
	for i := 0; i < len(s); i++ {
		if !alnum(s[i]) && s[i] != '_' && s[i] != '-' {
			return false
		}
	}
	return s != ""
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// Backend reports whether s could name a backend, linked or not: a bare
// TOML key of at most 32 lower-case words starting with a letter, so a
// table header ([vm.NAME]) names it unquoted and a driver key's value is
// compared lower-cased.
func Backend(s string) bool { return len(s) <= 32 && Words(s, true) && s[0] >= 'a' && s[0] <= 'z' }

// BackendSetting reports whether s could be a key of a backend's settings
// table: a bare TOML key, which resolved configurations render as is.
func BackendSetting(s string) bool { return len(s) <= 64 && Key(s) }
