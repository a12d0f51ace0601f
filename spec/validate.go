package spec

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/images"
	"github.com/sandboxforge/sbf/internal/lazyre"
	"github.com/sandboxforge/sbf/internal/names"
)

// null is a JSON null from request overrides; TOML has no null. It resets
// nullable keys and is an error elsewhere.
type null struct{}

// validator checks one layer's tree against the Config type. It rewrites
// accepted values into their canonical Go form in place (enums trimmed and
// lower-cased, durations parsed, integers widened to floats where a number
// is wanted) so merging and decoding need no further checks.
type validator struct {
	l        *layer
	managed  bool     // the managed overrides document may hold sbf-only keys
	backends Backends // whose settings tables are checked
	errs     Errors
}

func validateLayer(l *layer, managed bool, b Backends) Errors {
	v := &validator{l: l, managed: managed, backends: orNone(b)}
	v.table(l.tree, reflect.TypeFor[Config](), "")
	v.errs.sortWithin()
	return v.errs
}

func (v *validator) fail(path string, preferKey bool, format string, args ...any) {
	v.errs = append(v.errs, v.l.errorAt(path, preferKey, fmt.Sprintf(format, args...)))
}

func (v *validator) table(t map[string]any, typ reflect.Type, path string) {
	for key, val := range t {
		p := childPath(path, key)
		f, ok := lookupField(typ, key)
		if !ok {
			if norm, good, handled := v.backendTable(typ, key, val, p); handled {
				if good {
					t[key] = norm
				}
				continue
			}
			v.fail(p, true, "is not supported (allowed: %s)", allowedKeys(typ, v.backends))
			continue
		}
		if norm, ok := v.value(f, val, p); ok {
			t[key] = norm
		}
	}
}

// value checks one value against its field and returns its canonical form.
func (v *validator) value(f field, val any, path string) (any, bool) {
	if _, isNull := val.(null); isNull {
		if f.nullable {
			return reflect.Zero(f.typ).Interface(), true
		}
		v.fail(path, false, "must not be null")
		return nil, false
	}
	if f.managedOnly && !v.managed {
		v.fail(path, true, "is written only by sbf (in %s/%s); remove it from this file", Dir, OverridesFile)
		return nil, false
	}
	switch {
	case f.typ == secretType:
		return v.secret(f, val, path)
	case f.typ == envType:
		return v.env(val, path)
	case f.typ == timeType:
		return v.timestamp(val, path)
	case f.typ == durationType:
		return v.duration(f, val, path)
	case f.typ.Kind() == reflect.Struct:
		m, ok := val.(map[string]any)
		if !ok {
			v.fail(path, false, "must be a table")
			return nil, false
		}
		v.table(m, f.typ, path)
		return m, true
	case f.typ.Kind() == reflect.Map:
		return v.mapValue(f, val, path)
	case f.typ.Kind() == reflect.Slice:
		return v.list(f, val, path)
	}
	return v.scalar(f, val, path)
}

func (v *validator) scalar(f field, val any, path string) (any, bool) {
	switch f.typ.Kind() {
	case reflect.Bool:
		if b, ok := val.(bool); ok {
			return b, true
		}
		v.fail(path, false, "must be a boolean%s", got(val))
	case reflect.Int:
		n, ok := val.(int64)
		if ok && (n > 0 || !f.has("positive")) && (n >= 0 || !f.has("nonnegative")) && n <= math.MaxInt32 {
			return int(n), true
		}
		v.fail(path, false, "must be a %sinteger%s", positiveWord(f), got(val))
	case reflect.Float64:
		n, ok := toFloat(val)
		if ok && (n > 0 || !f.has("positive")) && !math.IsInf(n, 0) && !math.IsNaN(n) {
			return n, true
		}
		v.fail(path, false, "must be a %snumber%s", positiveWord(f), got(val))
	case reflect.String:
		return v.str(f, val, path)
	}
	return nil, false
}

func (v *validator) str(f field, val any, path string) (any, bool) {
	s, ok := val.(string)
	if !ok {
		v.fail(path, false, "must be a string%s", got(val))
		return nil, false
	}
	if f.drivers {
		// A backend this build does not link is valid here (see
		// checkBackends); only a name no backend could have is not.
		if norm := strings.ToLower(strings.TrimSpace(s)); norm == "auto" || names.Backend(norm) {
			return norm, true
		}
	}
	if enum := f.values(v.backends); enum != nil {
		norm := strings.ToLower(strings.TrimSpace(s))
		if norm == "" && f.nullable {
			return "", true
		}
		for _, e := range enum {
			if norm == e {
				return norm, true
			}
		}
		v.fail(path, false, "must be one of: %s (got %q)", strings.Join(slices.Sorted(slices.Values(enum)), ", "), clip(s))
		return nil, false
	}
	if f.has("nonempty") && strings.TrimSpace(s) == "" {
		v.fail(path, false, "must be a non-empty string")
		return nil, false
	}
	if f.has("image_location") && strings.HasPrefix(s, images.Scheme) {
		recipes, err := images.Recipes(nil)
		if name, _ := images.NameOf(s); err == nil && recipes[name].Name == "" {
			v.fail(path, false, "names no sbf image (known: %s; got %q)", strings.Join(images.Names(recipes), ", "), clip(s))
			return nil, false
		}
	}
	if f.has("snapshot_ref") && s != "" {
		if _, _, ok := ParseSnapshotRef(s); !ok {
			v.fail(path, false, "must be SANDBOX/NAME or NAME, a sandbox's name and a snapshot's "+
				"(letters, digits, '.', '-' and '_'); got %q", clip(s))
			return nil, false
		}
	}
	return s, true
}

// secret checks a secret-bearing value without ever quoting it.
func (v *validator) secret(f field, val any, path string) (any, bool) {
	s, ok := val.(string)
	if !ok {
		v.fail(path, false, "must be a string (got %s)", typeName(val))
		return nil, false
	}
	if f.has("nonempty") && strings.TrimSpace(s) == "" {
		v.fail(path, false, "must be a non-empty string")
		return nil, false
	}
	if f.has("image_location") && strings.HasPrefix(s, images.Scheme) {
		recipes, err := images.Recipes(nil)
		if name, _ := images.NameOf(s); err == nil && recipes[name].Name == "" {
			v.fail(path, false, "names no sbf image (known: %s; got %q)", strings.Join(images.Names(recipes), ", "), clip(s))
			return nil, false
		}
	}
	return s, true
}

// env checks an extra_env table; any value may be a secret, so none is
// quoted.
func (v *validator) env(val any, path string) (any, bool) {
	m, ok := val.(map[string]any)
	if !ok {
		v.fail(path, false, "must be a table")
		return nil, false
	}
	good := true
	for k, x := range m {
		if _, ok := x.(string); !ok {
			v.fail(childPath(path, k), false, "must be a string (got %s)", typeName(x))
			good = false
		}
	}
	return m, good
}

func (v *validator) duration(f field, val any, path string) (any, bool) {
	var d Duration
	switch x := val.(type) {
	case string:
		if strings.TrimSpace(x) == "" && f.nullable {
			return Duration(0), true
		}
		parsed, err := ParseDuration(x)
		if err != nil {
			v.fail(path, false, "%s", err)
			return nil, false
		}
		d = parsed
	case int64, float64:
		n, _ := toFloat(x)
		if !f.has("hours") {
			v.fail(path, false, "must be a duration string such as 30m, 12h or 7d (got %v)", x)
			return nil, false
		}
		parsed, err := DurationFromHours(n)
		if err != nil {
			v.fail(path, false, "%s", err)
			return nil, false
		}
		d = parsed
	default:
		v.fail(path, false, "must be a duration string such as 30m, 12h or 7d%s", got(val))
		return nil, false
	}
	if d == 0 && f.has("positive") {
		v.fail(path, false, "must be longer than zero")
		return nil, false
	}
	return d, true
}

func (v *validator) timestamp(val any, path string) (any, bool) {
	switch x := val.(type) {
	case time.Time:
		return x.UTC(), true
	case string:
		if t, err := time.Parse(time.RFC3339, x); err == nil {
			return t.UTC(), true
		}
	}
	v.fail(path, false, "must be an RFC 3339 date-time with a time zone%s", got(val))
	return nil, false
}

func (v *validator) list(f field, val any, path string) (any, bool) {
	items, ok := val.([]any)
	if !ok {
		v.fail(path, false, "must be an array of strings")
		return nil, false
	}
	out := make([]string, 0, len(items))
	good := true
	item := field{typ: reflect.TypeFor[string](), enum: f.enum, drivers: f.drivers, checks: f.checks}
	for i, it := range items {
		p := path + "[" + strconv.Itoa(i) + "]"
		norm, ok := v.str(item, it, p)
		if ok && f.has("nonempty_items") && strings.TrimSpace(norm.(string)) == "" {
			v.fail(p, false, "must be a non-empty string")
			ok = false
		}
		if ok && f.has("port_forward") {
			ok = v.portForward(norm.(string), p)
		}
		if ok && f.has("egress_rule") {
			if _, err := egress.ParseRule(norm.(string)); err != nil {
				var re *egress.RuleError
				errors.As(err, &re)
				v.fail(p, false, "%q: %s", clip(norm.(string)), re.Reason)
				ok = false
			}
		}
		if !ok {
			good = false
			continue
		}
		out = append(out, norm.(string))
	}
	return out, good
}

var portForwardRE = lazyre.New(`^(\d{1,5})(?::(\d{1,5}))?$`)

func (v *validator) portForward(s, path string) bool {
	m := portForwardRE.FindStringSubmatch(s)
	if m == nil {
		v.fail(path, false, "must be HOST:GUEST ports such as \"8080:80\" (got %q)", clip(s))
		return false
	}
	for _, part := range m[1:] {
		if n, _ := strconv.Atoi(part); part != "" && (n < 1 || n > 65535) {
			v.fail(path, false, "port %s is out of range 1-65535", part)
			return false
		}
	}
	return true
}

func (v *validator) mapValue(f field, val any, path string) (any, bool) {
	m, ok := val.(map[string]any)
	if !ok {
		v.fail(path, false, "must be a table")
		return nil, false
	}
	for k, x := range m {
		p := childPath(path, k)
		if f.has("sandbox_name") && !ValidSandboxName(k) {
			v.fail(
				p,
				true,
				"is not a valid sandbox name (letters and digits, single '-' or '_' between them, at most %d characters)",
				maxSandboxName,
			)
			continue
		}
		if norm, ok := v.value(field{key: k, typ: f.typ.Elem()}, x, p); ok {
			m[k] = norm
		}
	}
	return m, true
}

const maxSandboxName = 40

// ValidSandboxName reports whether a name can become part of a backend
// instance name on every driver.
func ValidSandboxName(name string) bool {
	return len(name) <= maxSandboxName && names.Words(name, false)
}

func toFloat(val any) (float64, bool) {
	switch x := val.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func positiveWord(f field) string {
	switch {
	case f.has("positive"):
		return "positive "
	case f.has("nonnegative"):
		return "non-negative "
	}
	return ""
}

// typeName names a value's type without showing it.
func typeName(val any) string {
	switch val.(type) {
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a date-time"
	}
	return fmt.Sprintf("%T", val)
}

// got describes a value of the wrong type, so "cpus = true" reads as
// "must be a positive integer (got boolean true)".
func got(val any) string {
	switch x := val.(type) {
	case bool:
		return fmt.Sprintf(" (got boolean %v)", x)
	case string:
		return fmt.Sprintf(" (got string %q)", clip(x))
	case int64:
		return fmt.Sprintf(" (got %d)", x)
	case float64:
		return " (got " + strconv.FormatFloat(x, 'f', -1, 64) + ")"
	case []any:
		return " (got an array)"
	case map[string]any:
		return " (got a table)"
	case nil:
		return ""
	}
	return fmt.Sprintf(" (got %T)", val)
}
