package spec

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

const canary = "Sup3rS3cretCanary"

func TestSecretNeverRendersItsValue(t *testing.T) {
	s := NewSecret(canary)
	env := NewEnv(map[string]string{"MYSQL_PASSWORD": canary, "API_KEY": canary,
		"DATABASE_URL": "mysql://app:" + canary + "@db:3306/app", "TZ": "UTC"})
	v := struct {
		S Secret `json:"s" toml:"s"`
		E Env    `json:"e" toml:"e"`
	}{s, env}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%10s", "%d"} {
		outs = append(outs, fmt.Sprintf(verb, s), fmt.Sprintf(verb, v), fmt.Sprintf(verb, env["API_KEY"]))
	}
	j, _ := json.Marshal(v)
	tm, _ := toml.Marshal(v)
	outs = append(outs, string(j), string(tm), s.String(), fmt.Sprint(&v), fmt.Sprintln(s))
	for _, out := range outs {
		if strings.Contains(out, canary) || strings.Contains(out, fmt.Sprintf("%x", canary)) {
			t.Fatalf("the secret leaked: %s", out)
		}
	}
	if !strings.Contains(string(j), `"DATABASE_URL":"mysql://app:***@db:3306/app"`) ||
		!strings.Contains(string(j), `"TZ":"UTC"`) {
		t.Errorf("json = %s: want the URL with its password masked and plain values shown", j)
	}
	if s.Reveal() != canary || env.Reveal()["API_KEY"] != canary ||
		env["DATABASE_URL"].Reveal() != "mysql://app:"+canary+"@db:3306/app" {
		t.Error("Reveal must return the value itself")
	}
}

func TestSecretShowsReferencesAndEmptiness(t *testing.T) {
	for in, want := range map[string]string{"${DB_PW}": "${DB_PW}", "${A}${B}": "${A}${B}", "x${A}": "***", "": ""} {
		if got := NewSecret(in).String(); got != want {
			t.Errorf("NewSecret(%q) renders %q, want %q", in, got, want)
		}
	}
}

// Validation errors about secret-bearing keys say what is wrong without
// quoting the value.
func TestSecretKeysAreNeverQuotedInErrors(t *testing.T) {
	_, errs := load(t, map[string]string{FileName: "[infra.mysql]\nroot_password = 7777777\n" +
		"extra_env = { MYSQL_PASSWORD = 8888888 }\n[infra.redis]\nextra_env = { REDIS_PASSWORD = [\"9999999\"] }\n"}, nil)
	if len(errs) != 3 {
		t.Fatalf("errors = %v", errs)
	}
	for _, n := range []string{"7777777", "8888888", "9999999"} {
		if strings.Contains(errs.Error(), n) {
			t.Errorf("errors quote a secret: %v", errs)
		}
	}
}

func TestLooksSecret(t *testing.T) {
	for _, k := range []string{"MYSQL_PASSWORD", "mysql_pwd", "API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
		"DB_PASS", "SENTRY_DSN"} {
		if !LooksSecret(k) {
			t.Errorf("%s should look secret", k)
		}
	}
	for _, k := range []string{"TZ", "MYSQL_DATABASE", "LANG", "MYSQL_USER"} {
		if LooksSecret(k) {
			t.Errorf("%s should not look secret", k)
		}
	}
}
