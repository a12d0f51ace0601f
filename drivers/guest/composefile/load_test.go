package composefile

import (
	"context"
	"errors"
	"github.com/sandboxforge/sbf/drivers/guest"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/spec"
)

func load(t *testing.T, dir string, c spec.Compose, network string, env map[string]string) (*guest.Project, error) {
	t.Helper()
	if c.Files == nil {
		c.Files = []string{"compose.yaml"}
	}
	return LoadProject(context.Background(), guest.LoadOptions{Root: filepath.Join("testdata", "compose", dir),
		Compose: c,
		Sandbox: "API", Network: network, Env: env})
}

func TestRealWorldComposeFilesLoad(t *testing.T) {
	cases := map[string]struct {
		compose  spec.Compose
		services []string
		extra    []string
	}{
		"webapp-build": {services: []string{"db", "web"}, extra: []string{"app"}},
		"profiles":     {services: []string{"api"}},
		"env-files":    {services: []string{"web"}, extra: []string{"web.env"}},
		"extends":      {services: []string{"scheduler", "worker"}},
		"multi-file": {compose: spec.Compose{Files: []string{"compose.yaml", "compose.override.yaml"}},
			services: []string{"app", "cache"}},
		"networks-volumes": {services: []string{"app", "db", "proxy"}},
		"resources":        {services: []string{"job"}},
		"secrets-configs":  {services: []string{"app"}, extra: []string{"app.conf", "token.txt"}},
		"wordpress":        {services: []string{"db", "wordpress"}},
		"minimal":          {services: []string{"hello"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := load(t, name, tc.compose, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(slices.Sorted(maps.Keys(p.Services)), ","); got != strings.Join(tc.services, ",") {
				t.Errorf("services = %s, want %v", got, tc.services)
			}
			if strings.Join(p.Extra, ",") != strings.Join(tc.extra, ",") {
				t.Errorf("extra files = %v, want %v", p.Extra, tc.extra)
			}
			if p.Name != "sbf-api" || len(p.Bundle) != 16 {
				t.Errorf("name %q bundle %q", p.Name, p.Bundle)
			}
			again, _ := load(t, name, tc.compose, "", nil)
			if again.Bundle != p.Bundle {
				t.Error("loading twice gave different bundle hashes")
			}
		})
	}
}

func TestInterpolationAndProfiles(t *testing.T) {
	p, _ := load(t, "env-files", spec.Compose{}, "", nil)
	if !strings.Contains(string(p.Resolved), "example/web:2.3") ||
		!strings.Contains(string(p.Resolved), "MODE: production") {
		t.Errorf("resolved compose file:\n%s", p.Resolved)
	}
	p, _ = load(t, "profiles", spec.Compose{Profiles: []string{"debug"}}, "", nil)
	if _, ok := p.Services["debugger"]; !ok || len(p.Services) != 2 {
		t.Errorf("with profile debug: %v", slices.Sorted(maps.Keys(p.Services)))
	}
	t.Setenv("DB_PASS", "from-the-process")
	if _, err := load(t, "required-var", spec.Compose{}, "", nil); err == nil {
		t.Error("the process environment was used without use_process_env")
	}
	p, err := LoadProject(context.Background(), guest.LoadOptions{Root: "testdata/compose/required-var",
		Compose: spec.Compose{Files: []string{"compose.yaml"}, UseProcessEnv: true}, Sandbox: "api",
		Environ: os.Environ()})
	if err != nil || !strings.Contains(string(p.Resolved), "from-the-process") {
		t.Errorf("use_process_env: %v", err)
	}
	p, _ = load(t, "required-var", spec.Compose{}, "", map[string]string{"DB_PASS": "injected"})
	if !strings.Contains(string(p.Resolved), "injected") {
		t.Error("connection variables were not available to interpolation")
	}
}

func TestBrokenComposeFilesNameTheFile(t *testing.T) {
	for _, name := range []string{"broken-yaml", "unknown-key", "required-var"} {
		_, err := load(t, name, spec.Compose{}, "", nil)
		var pe *guest.ProjectError
		if !errors.As(err, &pe) || !strings.HasSuffix(pe.File, filepath.Join(name, "compose.yaml")) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := load(t, "minimal", spec.Compose{Files: []string{"nope.yaml"}}, "", nil)
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestServiceHashesChangeOnlyForTheEditedService(t *testing.T) {
	dir := t.TempDir()
	write := func(image string) {
		os.WriteFile(filepath.Join(dir, "compose.yaml"),
			[]byte("services:\n  a:\n    image: "+image+"\n  b:\n    image: busybox\n"), 0o644)
	}
	write("nginx:1")
	before, _ := LoadProject(context.Background(), guest.LoadOptions{Root: dir,
		Compose: spec.Compose{Files: []string{"compose.yaml"}}, Sandbox: "x"})
	write("nginx:2")
	after, _ := LoadProject(context.Background(), guest.LoadOptions{Root: dir,
		Compose: spec.Compose{Files: []string{"compose.yaml"}}, Sandbox: "x"})
	if before.Services["a"] == after.Services["a"] || before.Services["b"] != after.Services["b"] ||
		before.Bundle == after.Bundle {
		t.Errorf("hashes: before %v, after %v", before.Services, after.Services)
	}
}

func TestAppJoinsTheServicesNetwork(t *testing.T) {
	p, _ := load(t, "networks-volumes", spec.Compose{}, "lima-net-api", nil)
	text := string(p.Resolved)
	if strings.Count(text, "sbf_services: null") != 3 || !strings.Contains(text, "name: lima-net-api") ||
		!strings.Contains(text, "external: true") {
		t.Errorf("resolved:\n%s", text)
	}
}
