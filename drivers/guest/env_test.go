package guest

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"

	"github.com/sandboxforge/sbf/internal/atomicfile"
	"github.com/sandboxforge/sbf/spec"
)

func TestUpsertEnv(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		vars     map[string]string
		want     string
	}{
		{"empty", "", map[string]string{"B": "2", "A": "1"}, "A=1\nB=2\n"},
		{"replace in place, keep the rest", "# app settings\nA=old\n\nKEEP=me # note\nB = old # mine\n",
			map[string]string{"A": "1", "B": "2", "C": "3"},
			"# app settings\nA=1\n\nKEEP=me # note\nB = 2 # mine\nC=3\n"},
		{"export prefix and CRLF", "export A=old\r\nX=y\r\n", map[string]string{"A": "1"}, "export A=1\r\nX=y\r\n"},
		{"one trailing newline", "X=1\n\n\n", map[string]string{"A": "1"}, "X=1\nA=1\n"},
		{"no trailing newline", "X=1", map[string]string{}, "X=1\n"},
		{"quoting", "", map[string]string{"P": `pa ss"$x`, "E": "", "T": "tick`s", "Q": `it's $HOME\`},
			"E=''\nP='pa ss\"$x'\nQ=\"it's \\$HOME\\\\\"\nT='tick`s'\n"},
		{"line breaks", "", map[string]string{"M": "a\nb\r"}, "M=\"a\\nb\\r\"\n"},
		{"duplicates all replaced", "A=1\nA=2\n", map[string]string{"A": "3"}, "A=3\nA=3\n"},
		{"similar names untouched", "AB=1\n#A=2\n", map[string]string{"A": "3"}, "AB=1\n#A=2\nA=3\n"},
		{"multi-line value of another key", "X=\"one\nA=two\"\n", map[string]string{"A": "3"},
			"X=\"one\nA=two\"\nA=3\n"},
		{"multi-line value replaced whole", "A='one\ntwo' # c\nB=1\n", map[string]string{"A": "3"}, "A='3' # c\nB=1\n"},
		{"statement after a closing quote", "X='x' A=old\n", map[string]string{"A": "3"}, "X='x' A=3\n"},
		{"stays quoted before a statement", "A='x' B=2\n", map[string]string{"A": "3"}, "A='3' B=2\n"},
		{"bare key gets a value", "A\nexport B\n", map[string]string{"A": "1", "B": "2"}, "A=1\nexport B=2\n"},
		{"yaml style", "A: old\n", map[string]string{"A": "1"}, "A: 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(UpsertEnv([]byte(tc.in), tc.vars)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The case, read back by the call docker compose makes.
func TestEnvValuesRoundTripThroughDotenv(t *testing.T) {
	vars := map[string]string{"DB_PASSWORD": "tick`s", "B": `back\slash\`, "D": `a"b'c$d\`, "H": "$HOME", "N": "l1\nl2",
		"U": "ünï cødé", "E": ""}
	path := filepath.Join(t.TempDir(), ".env")
	os.WriteFile(path, []byte("# mine\nDB_PASSWORD=old\n"), 0o600)
	if _, err := WriteEnvFile(plainFile(path), path, vars); err != nil {
		t.Fatal(err)
	}
	got, err := dotenv.GetEnvFromFile(map[string]string{"HOME": "/root"}, []string{path})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range vars {
		if got[k] != v {
			t.Errorf("%s: dotenv reads %q, sbf meant %q", k, got[k], v)
		}
	}
}

func TestEnvRefusesWhatNoEnvironmentCanHold(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	for _, tc := range []struct{ key, value, want string }{
		{"DB_PASSWORD", "a\x00b", "DB_PASSWORD: the value contains a NUL byte"},
		{"DB_PASSWORD", "\xff", "DB_PASSWORD: the value is not valid UTF-8"},
		{"NOT-A-NAME", "x", `"NOT-A-NAME" is not an environment variable name`},
	} {
		_, err := WriteEnvFile(plainFile(path), path, map[string]string{tc.key: tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s=%q: %v, want an error saying %q", tc.key, tc.value, err, tc.want)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a refused value was written")
	}
}

func TestEnvLeavesAFileComposeCannotReadAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	broken := "A=1\nB=\"unterminated\nC=3\n"
	os.WriteFile(path, []byte(broken), 0o600)
	_, err := WriteEnvFile(plainFile(path), path, map[string]string{"A": "2"})
	if err == nil || !strings.Contains(err.Error(), "line 2: unterminated quoted value") {
		t.Errorf("err = %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != broken {
		t.Errorf("the file changed: %q", got)
	}
}

// readDotenv reads a .env document with docker compose's parser. Every
// variable reference resolves to a marker, so a value sbf meant literally
// that compose would expand shows up, and no value depends on another.
func readDotenv(t *testing.T, doc []byte) map[string]string {
	t.Helper()
	env, ok := parseDotenv(string(doc))
	if !ok {
		t.Fatalf("docker compose's reader rejects what sbf wrote: %q", doc)
	}
	return env
}

func parseDotenv(doc string) (map[string]string, bool) {
	env, err := dotenv.ParseWithLookup(strings.NewReader(doc), func(string) (string, bool) {
		return "<expanded>",
			true
	})
	return env, err == nil
}

func FuzzUpsertEnv(f *testing.F) {
	for _, seed := range []string{"", "A=1\n", "# c\nA=1\n\nB=2", "export A=x\r\n", "A=1\n\n\n", "=\n", "A",
		"X=\"1\nA=2\"\n", "A='x' B=2 # c\n", "A\nB: 'q'\n", "\uFEFFA=\"a\\\"b\"\n"} {
		for _, v := range []string{"v", "tick`s", `it's "$x"\`, "a\nb", ""} {
			f.Add(seed, "A", v)
		}
	}
	f.Fuzz(func(t *testing.T, doc, key, value string) {
		vars := map[string]string{key: value}
		if CheckEnv(vars) != nil {
			return // refused by WriteEnvFile; TestEnvRefusesWhatNoEnvironmentCanHold
		}
		// The reading of the normalised document: a last line without its
		// newline reads as a value of an empty key.
		before, readable := parseDotenv(normalizedEnv([]byte(doc)))
		_, err := envStatements(normalizedEnv([]byte(doc)))
		if readable && err != nil {
			t.Fatalf("compose reads %q but sbf does not: %v", doc, err)
		}
		out := UpsertEnv([]byte(doc), vars)
		if len(out) == 0 || out[len(out)-1] != '\n' || bytes.HasSuffix(out, []byte("\n\n")) {
			t.Fatalf("not exactly one trailing newline: %q", out)
		}
		if err != nil {
			return // WriteEnvFile refuses it: TestEnvLeavesAFileComposeCannotReadAlone
		}
		if again := UpsertEnv(out, vars); !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%q\n%q", out, again)
		}
		if !readable {
			return // only the expansion of a reference fails; the structure is sound
		}
		after := readDotenv(t, out)
		if after[key] != value {
			t.Fatalf("%s: compose reads %q from %q, sbf wrote %q", key, after[key], out, value)
		}
		delete(after, key)
		delete(before, key)
		if !maps.Equal(before, after) {
			t.Fatalf("other variables changed:\n%v\n%v\n%q", before, after, out)
		}
	})
}

func TestConnectionEnvAndRedaction(t *testing.T) {
	infra := spec.Defaults(spec.Host{OS: "linux"}).Infra
	infra.MySQL.RootPassword = spec.NewSecret("${DB_ROOT_PW}")
	getenv := func(k string) string { return map[string]string{"DB_ROOT_PW": "s3cr@t"}[k] }
	env, err := ConnectionEnv(infra, "api", []string{"mysql", "redis"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"DB_HOST": "lima-mysql-api", "DB_PORT": "3306", "DB_NAME": "app", "DB_USER": "root", "DB_PASSWORD": "s3cr@t",
		"MYSQL_HOST": "lima-mysql-api", "MYSQL_PORT": "3306", "MYSQL_DATABASE": "app", "MYSQL_USER": "root",
		"MYSQL_PASSWORD": "s3cr@t",
		"DATABASE_URL":   "mysql://root:s3cr%40t@lima-mysql-api:3306/app",
		"REDIS_HOST":     "lima-redis-api", "REDIS_PORT": "6379", "REDIS_URL": "redis://lima-redis-api:6379/0",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if len(env) != len(want) {
		t.Errorf("%d variables, want %d", len(env), len(want))
	}
	red := Redacted(env)
	for k, v := range red {
		if strings.Contains(v, "s3cr") {
			t.Errorf("%s leaks the password: %q", k, v)
		}
	}
	if _, err := ConnectionEnv(infra, "api", []string{"mysql"}, func(string) string { return "" }); err == nil ||
		!strings.Contains(err.Error(), "${DB_ROOT_PW}") {
		t.Errorf("unset variable: %v", err)
	}
	if n := NetworkName(infra, "api"); n != "lima-net-api" {
		t.Errorf("network = %q", n)
	}
}

func TestWriteEnvFileKeepsCommentsAndMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	os.WriteFile(path, []byte("# keep me\nAPP=1\n"), 0o640)
	changed, err := WriteEnvFile(plainFile(path), path, map[string]string{"REDIS_HOST": "r"})
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	got, _ := os.ReadFile(path)
	info, _ := os.Stat(path)
	if string(got) != "# keep me\nAPP=1\nREDIS_HOST=r\n" || info.Mode().Perm() != 0o640 {
		t.Errorf("%q mode %v", got, info.Mode())
	}
	if changed, _ := WriteEnvFile(plainFile(path), path, map[string]string{"REDIS_HOST": "r"}); changed {
		t.Error("an unchanged file was rewritten")
	}
	fresh := filepath.Join(t.TempDir(), "new.env")
	WriteEnvFile(plainFile(fresh), fresh, map[string]string{"A": "1"})
	if info, _ := os.Stat(fresh); info.Mode().Perm() != 0o600 {
		t.Errorf("a new env file holding secrets is %v, want 0600", info.Mode())
	}
}

func TestServicesProject(t *testing.T) {
	infra := spec.Defaults(spec.Host{OS: "linux"}).Infra
	infra.MySQL.ExtraEnv = spec.NewEnv(map[string]string{"TZ": "UTC"})
	p, err := ServicesProject(infra, "api", []string{"mysql", "redis"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	text := string(p.Resolved)
	for _, want := range []string{"name: sbf-api-services", "container_name: lima-mysql-api",
		"container_name: lima-redis-api",
		"image: mysql:8.0", "image: redis:7-alpine", "MYSQL_DATABASE: app", "MYSQL_ROOT_PASSWORD: root", "TZ: UTC",
		"name: lima-net-api", "mysqladmin ping", "redis-cli ping"} {
		if !strings.Contains(text, want) {
			t.Errorf("generated project lacks %q:\n%s", want, text)
		}
	}
	if len(p.Services) != 2 || p.Bundle == "" {
		t.Errorf("project = %+v", p)
	}
	only, _ := ServicesProject(infra, "api", []string{"redis"}, func(string) string { return "" })
	if strings.Contains(string(only.Resolved), "mysql") || only.Services["redis"] != p.Services["redis"] {
		t.Errorf("redis alone:\n%s", only.Resolved)
	}
}

// plainFile is an EnvFile at a path, as a test writes one.
type plainFile string

func (p plainFile) ReadFile() ([]byte, fs.FileMode, error) {
	info, err := os.Stat(string(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	data, err := os.ReadFile(string(p))
	return data, info.Mode().Perm(), err
}

func (p plainFile) WriteFile(data []byte, perm fs.FileMode) error {
	return atomicfile.WriteFile(string(p), data, perm)
}
