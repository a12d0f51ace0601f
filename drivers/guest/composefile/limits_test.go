package composefile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/drivers/guest/composerun"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/spec"
)

// limitOf is the bound a load was refused at ("" when none).
func limitOf(err error) string {
	if c := coded.Of(err, ""); c != nil && c.Code == coded.ComposeLimit {
		return fmt.Sprint(c.Details["limit"])
	}
	return ""
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A compose, included or env file past composerun.MaxFileBytes, or files
// past MaxLoadBytes together, end the load in the check, before compose-go
// reads them, with COMPOSE_LIMIT_EXCEEDED naming the bound.
func TestFilesPastTheSizeBoundsAreNotLoaded(t *testing.T) {
	big := "# " + strings.Repeat("x", composerun.MaxFileBytes) + "\n"
	part := "# " + strings.Repeat("x", composerun.MaxFileBytes-1024) + "\n"
	service := "services:\n  web:\n    image: busybox\n"
	for name, c := range map[string]struct {
		files map[string]string
		limit string
	}{
		"compose file": {map[string]string{"compose.yaml": service + big}, "file_bytes"},
		"env file": {map[string]string{"compose.yaml": service + "    env_file: web.env\n", "web.env": big},
			"file_bytes"},
		"dot env": {map[string]string{"compose.yaml": service, ".env": big}, "file_bytes"},
		"included": {map[string]string{"compose.yaml": "include: [a.yaml]\n" + service, "a.yaml": big},
			"file_bytes"},
		"all together": {map[string]string{"compose.yaml": "include: [a.yaml, b.yaml, c.yaml, d.yaml, e.yaml]\n" +
			service, "a.yaml": part, "b.yaml": part, "c.yaml": part, "d.yaml": part, "e.yaml": part}, "load_bytes"},
		"within": {map[string]string{"compose.yaml": service + part}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, c.files)
			_, _, err := loadInChild(t, guest.LoadOptions{Root: dir, Sandbox: "web",
				Compose: spec.Compose{Files: []string{"compose.yaml"}}})
			if got := limitOf(err); got != c.limit || c.limit == "" && err != nil {
				t.Errorf("refused at %q (%v), want %q", got, err, c.limit)
			}
		})
	}
}

// An env file whose variables double one another (a few hundred bytes
// that interpolate to gigabytes) stops at the child's address space.
func TestAnInterpolationBombStopsAtTheChildsMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the child bounds its memory on Linux")
	}
	testutil.WithoutRace(t, "the child's address space holds the detector's own mappings")
	var env strings.Builder
	env.WriteString("V0=" + strings.Repeat("x", 1024) + "\n")
	for i := 1; i <= 21; i++ { // 1 KiB doubled 21 times: 2 GiB
		fmt.Fprintf(&env, "V%d=${V%d}${V%d}\n", i, i-1, i-1)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{".env": env.String(),
		"compose.yaml": "services:\n  web:\n    image: busybox\n    environment: [\"BIG=${V21}\"]\n"})
	_, _, err := loadInChild(t, guest.LoadOptions{Root: dir, Sandbox: "web",
		Compose: spec.Compose{Files: []string{"compose.yaml"}}})
	if got := limitOf(err); got != "address_space" {
		t.Errorf("refused at %q (%v), want address_space", got, err)
	}
}
