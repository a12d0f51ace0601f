package drivers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEnvDuration(t *testing.T) {
	env := Env{Getenv: func(k string) string {
		return map[string]string{"GOOD": "90s", "ZERO": "0s", "BAD": "soon"}[k]
	}}
	if d, err := env.Duration("GOOD", "5m"); d != 90*time.Second || err != nil {
		t.Errorf("GOOD: %v %v", d, err)
	}
	if d, err := env.Duration("UNSET", "5m"); d != 0 || err != nil {
		t.Errorf("unset: %v %v", d, err)
	}
	for _, key := range []string{"ZERO", "BAD"} {
		if _, err := env.Duration(key, "5m"); err == nil || !strings.Contains(err.Error(), key+"=") ||
			!strings.Contains(err.Error(), "such as 5m") {
			t.Errorf("%s: %v", key, err)
		}
	}
}

func TestDiagnoseWithReportsUnreadableSettings(t *testing.T) {
	diagnose := DiagnoseWith("x", func(Env) (int, error) { return 0, errors.New("X_TIMEOUT is malformed") },
		func(context.Context, int, []Spec) Diagnosis {
			t.Fatal("diagnosed with unreadable settings")
			return Diagnosis{}
		})
	d := diagnose(context.Background(), Env{}, nil)
	if d.Usable || len(d.Checks) != 1 || !strings.Contains(d.Checks[0].Detail, "X_TIMEOUT") {
		t.Errorf("%+v", d)
	}
}
