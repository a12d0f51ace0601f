// Package lazyre holds package-level regular expressions that compile on
// first use. Compiled at init, sbf's patterns cost every process start
// ~0.3 ms (a bounded repetition such as {0,63} compiles to as many
// states), a tenth of what `sbf exec` adds to a guest command. Go's own
// commands do the same (internal/lazyregexp).
package lazyre

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// Regexp is a regexp.Regexp compiled when a method first needs it.
type Regexp struct {
	expr string
	once sync.Once
	rx   *regexp.Regexp
}

// inTest: a test binary compiles every pattern at init, so a pattern
// that does not compile fails its package's tests, not a user's command.
var inTest = strings.HasSuffix(strings.TrimSuffix(os.Args[0], ".exe"), ".test")

// New returns expr as a Regexp; it panics on first use if expr does not compile.
func New(expr string) *Regexp {
	r := &Regexp{expr: expr}
	if inTest {
		r.compiled()
	}
	return r
}

func (r *Regexp) compiled() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.expr) })
	return r.rx
}

// String returns the source text.
func (r *Regexp) String() string { return r.expr }

// MatchString is regexp.Regexp.MatchString.
func (r *Regexp) MatchString(s string) bool { return r.compiled().MatchString(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.compiled().FindStringSubmatch(s) }

// FindAllStringSubmatch is regexp.Regexp.FindAllStringSubmatch.
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.compiled().FindAllStringSubmatch(s, n)
}

// FindSubmatch is regexp.Regexp.FindSubmatch.
func (r *Regexp) FindSubmatch(b []byte) [][]byte { return r.compiled().FindSubmatch(b) }

// ReplaceAllString is regexp.Regexp.ReplaceAllString.
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.compiled().ReplaceAllString(src, repl)
}

// ReplaceAllStringFunc is regexp.Regexp.ReplaceAllStringFunc.
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.compiled().ReplaceAllStringFunc(src, repl)
}
