package guest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sandboxforge/sbf/internal/lazyre"
	"github.com/sandboxforge/sbf/internal/names"
	"github.com/sandboxforge/sbf/spec"
)

// Names derive from the v1 keys: prefix-sandbox, made safe for Docker.
var unsafeName = lazyre.New(`[^A-Za-z0-9_-]`)

func sanitize(s string) string {
	s = strings.Trim(unsafeName.ReplaceAllString(s, "-"), "-_")
	if s == "" {
		return "default"
	}
	return s
}

// NetworkName is the Docker network a sandbox's services and app share.
func NetworkName(infra spec.Infra, sandbox string) string {
	if infra.NetworkName != "" {
		return infra.NetworkName
	}
	return sanitize(infra.NetworkNamePrefix + "-" + sandbox)
}

// MySQLContainer and RedisContainer name a sandbox's service containers.
func MySQLContainer(infra spec.Infra, sandbox string) string {
	return sanitize(infra.MySQL.ContainerNamePrefix + "-" + sandbox)
}

func RedisContainer(infra spec.Infra, sandbox string) string {
	return sanitize(infra.Redis.ContainerNamePrefix + "-" + sandbox)
}

var envRef = lazyre.New(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Expand replaces ${VAR} with the host's value, so secrets stay out of
// committed files. An unset variable is an error naming it.
func Expand(value, key string, getenv func(string) string) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(value, func(ref string) string {
		name := envRef.FindStringSubmatch(ref)[1]
		v := getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", &UnsetEnvError{Key: key, Names: missing}
	}
	return out, nil
}

// UnsetEnvError is a ${VAR} a value refers to that sbf's environment does
// not set: the spec's shape is right, the environment is not ready.
type UnsetEnvError struct {
	Key   string
	Names []string
}

func (e *UnsetEnvError) Error() string {
	return fmt.Sprintf("%s refers to ${%s}, which is not set in sbf's environment", e.Key,
		strings.Join(e.Names, "}, ${"))
}

// ConnectionEnv is what the app needs to reach the sandbox's services.
func ConnectionEnv(
	infra spec.Infra,
	sandbox string,
	services []string,
	getenv func(string) string,
) (map[string]string, error) {
	env := map[string]string{}
	for _, svc := range services {
		switch svc {
		case "mysql":
			pw, err := Expand(infra.MySQL.RootPassword.Reveal(), "infra.mysql.root_password", getenv)
			if err != nil {
				return nil, err
			}
			host, db := MySQLContainer(infra, sandbox), infra.MySQL.Database
			for _, prefix := range []string{"DB_", "MYSQL_"} {
				env[prefix+"HOST"], env[prefix+"PORT"], env[prefix+"USER"], env[prefix+"PASSWORD"] = host, "3306", "root", pw
			}
			env["DB_NAME"], env["MYSQL_DATABASE"] = db, db
			u := url.URL{Scheme: "mysql", User: url.UserPassword("root", pw), Host: host + ":3306", Path: "/" + db}
			env["DATABASE_URL"] = u.String()
		case "redis":
			host := RedisContainer(infra, sandbox)
			env["REDIS_HOST"], env["REDIS_PORT"], env["REDIS_URL"] = host, "6379", "redis://"+host+":6379/0"
		}
	}
	return env, nil
}

// Redacted replaces secret values for output, plans and state.
func Redacted(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		switch {
		case strings.Contains(k, "PASSWORD"):
			v = "[redacted]"
		case k == "DATABASE_URL":
			if u, err := url.Parse(v); err == nil && u.User != nil {
				u.User = url.UserPassword(u.User.Username(), "redacted")
				v = u.String()
			}
		}
		out[k] = v
	}
	return out
}

// UpsertEnv sets each variable in a .env document. The value of every
// statement assigning a key is replaced where it stands (a bare `KEY`,
// which would take the value from the environment, gets `=value`); every
// other byte stays, new keys are appended in sorted order, and the result
// ends with exactly one newline. The document is read the way compose-go's
// dotenv (docker compose's reader) reads it, so a value spanning lines or
// a statement after a closing quote is never mistaken for an assignment.
// A document that reader rejects is only appended to: WriteEnvFile
// refuses to write it, as it refuses values CheckEnv rejects.
func UpsertEnv(doc []byte, vars map[string]string) []byte {
	src := normalizedEnv(doc)
	stmts, err := envStatements(src)
	if err != nil {
		stmts = nil
	}
	var out strings.Builder
	seen := map[string]bool{}
	last := 0
	for _, st := range stmts {
		v, ok := vars[st.key]
		if !ok {
			continue
		}
		seen[st.key] = true
		out.WriteString(src[last:st.start])
		q := quoteEnv(v)
		if st.bare {
			q = "=" + q
		} else if q == v && strings.ContainsRune(`'"`, rune(src[st.start])) {
			// Bare, it would run on into what follows the closing quote.
			q = "'" + v + "'"
		}
		out.WriteString(q)
		last = st.end
	}
	out.WriteString(src[last:])
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if !seen[k] {
			out.WriteString(k + "=" + quoteEnv(vars[k]) + "\n")
		}
	}
	return []byte(out.String())
}

// normalizedEnv ends a document with exactly one newline, first: the last
// line reads differently without its newline.
func normalizedEnv(doc []byte) string {
	src := string(bytes.TrimRight(doc, "\n"))
	if src == "" {
		return ""
	}
	return src + "\n"
}

// CheckEnv refuses what a .env file cannot carry to a container: quoting
// can represent any other value.
func CheckEnv(vars map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		v := vars[k]
		switch {
		case !names.EnvVar(k):
			errs = append(errs, fmt.Errorf("%q is not an environment variable name", k))
		case strings.IndexByte(v, 0) >= 0:
			errs = append(errs, fmt.Errorf("%s: the value contains a NUL byte, which no environment variable can hold", k))
		case !utf8.ValidString(v):
			errs = append(
				errs,
				fmt.Errorf("%s: the value is not valid UTF-8, which compose files and Docker's API cannot carry", k),
			)
		}
	}
	return errors.Join(errs...)
}

// quoteEnv writes v so that compose-go's dotenv reads back exactly v
// (CheckEnv's values): bare when nothing in it is special to a .env
// reader or a shell, else in single quotes, which expand nothing, else in
// double quotes with the escapes dotenv undoes. Single quotes cannot hold
// a quote, a line break (the file would no longer be one line per
// variable) or an odd run of trailing backslashes (the last one would
// escape the closing quote).
func quoteEnv(v string) string {
	switch {
	case v != "" && strings.Trim(v, plainEnvChars) == "":
		return v
	case !strings.ContainsAny(v, "'\n\r") && (len(v)-len(strings.TrimRight(v, `\`)))%2 == 0:
		return "'" + v + "'"
	}
	return `"` + doubleQuoted.Replace(v) + `"`
}

const plainEnvChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.,:/@%+-"

// dotenv undoes these in double quotes; `\$` keeps `$` from expanding.
var doubleQuoted = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "$", `\$`)

// EnvFile is a file connection variables are upserted into. sbf's is a
// hostpath.Writer, which neither reads nor writes through a link.
type EnvFile interface {
	// ReadFile returns the content (nil when the file is missing) and mode.
	ReadFile() ([]byte, fs.FileMode, error)
	// WriteFile replaces the content atomically.
	WriteFile(data []byte, perm fs.FileMode) error
}

// WriteEnvFile upserts vars into f (created 0600 when missing), named name
// in messages, and reports whether its content changed.
func WriteEnvFile(f EnvFile, name string, vars map[string]string) (bool, error) {
	old, perm, err := f.ReadFile()
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", name, err)
	}
	if old == nil {
		perm = 0o600
	}
	if err := CheckEnv(vars); err != nil {
		return false, fmt.Errorf("writing %s: %w", name, err)
	}
	if _, err := envStatements(normalizedEnv(old)); err != nil {
		return false, fmt.Errorf("writing %s: docker compose cannot read it, so sbf leaves it alone: %w", name, err)
	}
	next := UpsertEnv(old, vars)
	if bytes.Equal(old, next) {
		return false, nil
	}
	if err := f.WriteFile(next, perm); err != nil {
		return false, fmt.Errorf("writing %s: %w", name, err)
	}
	return true, nil
}

// envStatement is a statement of a .env document: the key it assigns and
// where its value lies (bare: `KEY` alone, value from the environment;
// end is where `=value` would go).
type envStatement struct {
	key        string
	start, end int
	bare       bool
}

var exportPrefix = lazyre.New(`^export\s+`)

// envStatements splits src the way compose-go's dotenv parser does
// (dotenv/parser.go), step for step, keeping positions instead of values.
func envStatements(src string) ([]envStatement, error) {
	var stmts []envStatement
	i := len(src) - len(strings.TrimPrefix(src, "\uFEFF"))
	for {
		j := strings.IndexFunc(src[i:], func(r rune) bool { return !unicode.IsSpace(r) })
		if j < 0 {
			return stmts, nil
		}
		if i += j; src[i] == '#' {
			if j = strings.IndexByte(src[i:], '\n'); j < 0 {
				return stmts, nil
			}
			i += j
			continue
		}
		if exportPrefix.MatchString(src[i:]) {
			i += len("export")
			i += len(src[i:]) - len(strings.TrimLeftFunc(src[i:], isEnvSpace))
		}
		key, sep, err := envKeyAt(src, i)
		if err != nil || sep < 0 {
			// At the end without `=`, the rest is a value for an empty key.
			return stmts, err
		}
		if src[sep] == '\n' {
			stmts = append(stmts, envStatement{key: key, start: sep, end: sep, bare: true})
			i = sep + 1
			continue
		}
		start := sep + 1 + len(src[sep+1:]) - len(strings.TrimLeftFunc(src[sep+1:], isEnvSpace))
		end, next, err := envValueEnd(src, start)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, envStatement{key: key, start: start, end: end})
		i = next
	}
}

// envKeyAt reads a key from i to its `=`, `:` or newline (sep; -1 at the
// end of src).
func envKeyAt(src string, i int) (string, int, error) {
	for off, r := range src[i:] {
		switch {
		case r == '=' || r == ':' || r == '\n':
			key := strings.TrimRightFunc(src[i:i+off], unicode.IsSpace)
			if strings.Contains(key, " ") {
				return "", 0, fmt.Errorf("line %d: a variable name cannot contain a space", envLineAt(src, i))
			}
			return key, i + off, nil
		case isEnvSpace(r), strings.ContainsRune("_.-[]", r), unicode.IsLetter(r), unicode.IsNumber(r):
		default:
			// The character is not quoted back: the line may hold a secret.
			return "", 0, fmt.Errorf("line %d: a variable name holds a character dotenv does not allow", envLineAt(src, i))
		}
	}
	return "", -1, nil
}

// envValueEnd finds the end of the value at start and where the next
// statement may begin.
func envValueEnd(src string, start int) (end, next int, err error) {
	if start == len(src) || src[start] != '"' && src[start] != '\'' {
		line, _, _ := strings.Cut(src[start:], "\n")
		next = start + len(line) + 1
		line, _, _ = strings.Cut(line, " #")
		return start + len(strings.TrimRightFunc(line, unicode.IsSpace)), min(next, len(src)), nil
	}
	escaped := false
	for k := start + 1; k < len(src); k++ {
		switch c := src[k]; {
		case c == src[start] && !escaped:
			return k + 1, k + 1, nil
		case c == '\\' && !escaped:
			escaped = true
		default:
			escaped = false
		}
	}
	return 0, 0, fmt.Errorf("line %d: unterminated quoted value", envLineAt(src, start))
}

func envLineAt(src string, i int) int { return 1 + strings.Count(src[:i], "\n") }

// isEnvSpace is dotenv's isSpace: blanks, not line breaks.
func isEnvSpace(r rune) bool {
	switch r {
	case '\t', '\v', '\f', '\r', ' ', 0x85, 0xA0:
		return true
	}
	return false
}
