package guest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		{"replace in place, keep the rest", "# app settings\nA=old\n\nKEEP=me # note\nB = old\n",
			map[string]string{"A": "1", "B": "2", "C": "3"}, "# app settings\nA=1\n\nKEEP=me # note\nB=2\nC=3\n"},
		{"export prefix and CRLF", "export A=old\r\nX=y\r\n", map[string]string{"A": "1"}, "export A=1\r\nX=y\r\n"},
		{"one trailing newline", "X=1\n\n\n", map[string]string{"A": "1"}, "X=1\nA=1\n"},
		{"no trailing newline", "X=1", map[string]string{}, "X=1\n"},
		{"quoting", "", map[string]string{"P": `pa ss"$x`, "E": ""}, "E=\"\"\nP=\"pa ss\\\"\\$x\"\n"},
		{"duplicates all replaced", "A=1\nA=2\n", map[string]string{"A": "3"}, "A=3\nA=3\n"},
		{"similar names untouched", "AB=1\n#A=2\n", map[string]string{"A": "3"}, "AB=1\n#A=2\nA=3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(UpsertEnv([]byte(tc.in), tc.vars)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func FuzzUpsertEnv(f *testing.F) {
	for _, seed := range []string{"", "A=1\n", "# c\nA=1\n\nB=2", "export A=x\r\n", "A=1\n\n\n", "=\n", "A"} {
		f.Add(seed, "A", "v")
	}
	f.Fuzz(func(t *testing.T, doc, key, value string) {
		if m := envLine.FindStringSubmatch(key + "="); m == nil || m[1] != "" || m[2] != key {
			return // not a variable name
		}
		vars := map[string]string{key: value}
		out := UpsertEnv([]byte(doc), vars)
		if len(out) == 0 || out[len(out)-1] != '\n' || bytes.HasSuffix(out, []byte("\n\n")) && len(bytes.TrimRight(out, "\n")) > 0 {
			t.Fatalf("not exactly one trailing newline: %q", out)
		}
		if again := UpsertEnv(out, vars); !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%q\n%q", out, again)
		}
		// Lines that do not assign the key survive byte for byte, in order.
		var kept []string
		for _, line := range strings.Split(strings.TrimRight(doc, "\n"), "\n") {
			if m := envLine.FindStringSubmatch(line); (m == nil || m[2] != key) && doc != "" {
				kept = append(kept, line)
			}
		}
		rest := string(out)
		for _, line := range kept {
			i := strings.Index(rest, line+"\n")
			if i < 0 {
				t.Fatalf("line %q lost or reordered in %q", line, out)
			}
			rest = rest[i+len(line)+1:]
		}
		if !strings.Contains(string(out), key+"="+quoteEnv(value)) {
			t.Fatalf("%s not set in %q", key, out)
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
		"MYSQL_HOST": "lima-mysql-api", "MYSQL_PORT": "3306", "MYSQL_DATABASE": "app", "MYSQL_USER": "root", "MYSQL_PASSWORD": "s3cr@t",
		"DATABASE_URL": "mysql://root:s3cr%40t@lima-mysql-api:3306/app",
		"REDIS_HOST":   "lima-redis-api", "REDIS_PORT": "6379", "REDIS_URL": "redis://lima-redis-api:6379/0",
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
	changed, err := WriteEnvFile(path, map[string]string{"REDIS_HOST": "r"}, atomicfile.WriteFile)
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	got, _ := os.ReadFile(path)
	info, _ := os.Stat(path)
	if string(got) != "# keep me\nAPP=1\nREDIS_HOST=r\n" || info.Mode().Perm() != 0o640 {
		t.Errorf("%q mode %v", got, info.Mode())
	}
	if changed, _ := WriteEnvFile(path, map[string]string{"REDIS_HOST": "r"}, atomicfile.WriteFile); changed {
		t.Error("an unchanged file was rewritten")
	}
	fresh := filepath.Join(t.TempDir(), "new.env")
	WriteEnvFile(fresh, map[string]string{"A": "1"}, atomicfile.WriteFile)
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
	for _, want := range []string{"name: sbf-api-services", "container_name: lima-mysql-api", "container_name: lima-redis-api",
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
