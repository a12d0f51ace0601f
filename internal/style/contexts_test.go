package style

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// processRoots are the files that may start a context of their own: each
// is where a process (or a test helper standing in for one) begins, or a
// place still to be given its caller's context (said so).
var processRoots = map[string]string{
	"cli/main.go":                                  "the sbf process: its root context, cancelled by an interrupt",
	"drivers/drivertest/drivertest.go":             "the driver contract, run by tests",
	"drivers/drivertest/snapshots.go":              "the driver contract, run by tests",
	"drivers/drivertest/check.go":                  "the driver contract, run by tests",
	"drivers/vz/supervisor/supervisortest/fake.go": "a fake supervisor process for tests",
	"internal/testutil/npm.go":                     "a test helper's npm lock",
}

// Below the process roots a context comes from the caller, so that an
// interrupt, a deadline or a request's values reach every call (issue 41).
func TestNoContextBackgroundBelowTheProcessRoots(t *testing.T) {
	walkGo(t, func(path string) error {
		rel, _ := filepath.Rel(filepath.Join("..", ".."), path)
		rel = filepath.ToSlash(rel)
		if strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "cmd/") || strings.HasPrefix(rel, "e2e/") ||
			strings.HasPrefix(rel, "kubevirt/") {
			return nil // tests, the programs' mains and the nested module's own roots
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "context.Background()") && processRoots[rel] == "" {
			t.Errorf("%s: context.Background() below the process roots: take the caller's context "+
				"(or context.WithoutCancel of it, for what outlives a request)", rel)
		}
		return nil
	})
}
