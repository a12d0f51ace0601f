// Package shellquote quotes words for sh: every command line sbf hands a guest
// shell is built from these, so no caller's value is ever read as shell
// syntax.
package shellquote

import (
	"strings"

	"github.com/sandboxforge/sbf/internal/lazyre"
)

// Quote single-quotes s for sh, whatever it holds.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// unsafeWord is what Python's shlex.quote quotes: anything outside ASCII
// word characters and @%+=:,./-.
var unsafeWord = lazyre.New(`[^A-Za-z0-9_@%+=:,./-]`)

// Word quotes s only when sh needs it, the way Python's shlex.quote does:
// SandboxForge v1 showed its command lines so, and sbf's match them.
func Word(s string) string {
	if s == "" {
		return "''"
	}
	if !unsafeWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// Join renders an argv as one command line of Words.
func Join(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Word(a)
	}
	return strings.Join(q, " ")
}
