package spec

import (
	"fmt"
	"io"
	"strings"

	"github.com/sandboxforge/sbf/internal/lazyre"
	"github.com/sandboxforge/sbf/internal/names"
)

// Redacted is what every output shows in place of a secret.
const Redacted = "***"

// Secret is a value no output may show: as JSON, TOML, text or through
// any fmt verb it reads "***". Reveal is the one way to the value, for the
// code that hands it to a guest. A value made only of ${VAR} references
// is shown as written: it names where the secret comes from, not the
// secret.
type Secret struct{ value string }

// NewSecret wraps a value.
func NewSecret(v string) Secret { return Secret{value: v} }

// Reveal returns the value itself. Call it only to hand the value to what
// needs it (a guest's environment), never to render it.
func (s Secret) Reveal() string { return s.value }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.value == "" }

func (s Secret) String() string {
	if s.value == "" || names.OnlyReferences(s.value) {
		return s.value
	}
	return Redacted
}

// GoString keeps %#v (and so test failure output) redacted too.
func (s Secret) GoString() string { return fmt.Sprintf("spec.Secret(%q)", s.String()) }

// Format renders every verb (%v, %+v, %s, %q, %x, …) from String, so no
// verb reaches the value.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s.String())
		return
	}
	io.WriteString(f, s.String())
}

// MarshalText serves JSON and TOML alike.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// EnvValue is one value of an extra_env table. It renders redacted when
// its key names a secret, and with its password masked when it is a URL
// carrying credentials; Reveal returns the value itself.
type EnvValue struct {
	value, shown string
}

// Env is an extra_env table.
type Env map[string]EnvValue

// NewEnv classifies each value by its key and content.
func NewEnv(m map[string]string) Env {
	out := make(Env, len(m))
	for k, v := range m {
		out[k] = newEnvValue(k, v)
	}
	return out
}

func newEnvValue(key, v string) EnvValue {
	shown := maskCredentials(v)
	if LooksSecret(key) {
		shown = NewSecret(v).String()
	}
	return EnvValue{value: v, shown: shown}
}

// Reveal returns the values themselves, for the guest's environment.
func (e Env) Reveal() map[string]string {
	out := make(map[string]string, len(e))
	for k, v := range e {
		out[k] = v.value
	}
	return out
}

// Reveal returns the value itself.
func (v EnvValue) Reveal() string { return v.value }

func (v EnvValue) String() string { return v.shown }

// GoString keeps %#v redacted.
func (v EnvValue) GoString() string { return fmt.Sprintf("spec.EnvValue(%q)", v.shown) }

// Format renders every verb from String.
func (v EnvValue) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", v.shown)
		return
	}
	io.WriteString(f, v.shown)
}

// MarshalText serves JSON and TOML alike.
func (v EnvValue) MarshalText() ([]byte, error) { return []byte(v.shown), nil }

var secretWords = []string{"PASSWORD", "PASSWD", "PWD", "PASS", "SECRET", "TOKEN", "KEY", "CREDENTIAL",
	"AUTH", "PRIVATE", "SALT", "COOKIE", "SESSION", "DSN"}

// LooksSecret reports whether an environment variable's name says its
// value is a secret (MYSQL_PASSWORD, API_KEY, GITHUB_TOKEN, …). It errs on
// the side of hiding.
func LooksSecret(key string) bool {
	upper := strings.ToUpper(key)
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	return false
}

// credentialsRE finds the password of a URL's user info (scheme://user:password@host),
// wherever the URL sits in the value.
var credentialsRE = lazyre.New(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)([^@\s/]+)@`)

// maskCredentials masks every URL password in a value.
func maskCredentials(v string) string {
	if !strings.Contains(v, "://") || !strings.Contains(v, "@") { // no URL with user info: nothing to compile
		return v
	}
	return credentialsRE.ReplaceAllString(v, "${1}"+Redacted+"@")
}
