package cli

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/drivers/guest/composefile"
	"github.com/sandboxforge/sbf/spec"
)

const examplesDir = "../examples"

// exampleEnv is what the examples expect from the person running them.
var exampleEnv = map[string]string{"SHOP_DB_PASSWORD": "tick`s", "NO_COLOR": "1"}

// examples lists every example workspace, so a new one is covered without
// touching this file.
func examples(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	for _, want := range []string{"gitops", "hello", "multi-sandbox", "web-mysql-redis"} {
		if !slices.Contains(names, want) {
			t.Errorf("examples/%s is missing", want)
		}
	}
	return names
}

// copyExample copies an example to a private folder (plan and apply write
// .sandboxforge/ there), leaving out what a run in place may have left.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	src, dst := filepath.Join(examplesDir, name), t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		switch {
		case d.Name() == spec.Dir || d.Name() == spec.LocalFileName || d.Name() == ".env":
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copying examples/%s: %v", name, err)
	}
	return dst
}

type resolvedSandbox struct {
	CPUs     int      `json:"cpus"`
	Memory   float64  `json:"memory_gib"`
	TTL      string   `json:"ttl"`
	Compose  bool     `json:"compose"`
	Services []string `json:"services"`
}

func TestEveryExampleValidatesAndPlansOnSim(t *testing.T) {
	for _, name := range examples(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(examplesDir, name, "README.md")); err != nil {
				t.Errorf("examples/%s has no README.md", name)
			}
			dir := copyExample(t, name)
			env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
			for k, v := range exampleEnv {
				env[k] = v
			}
			v := sbf(t, env, "validate", "-C", dir, "--set", "vm.driver=sim", "--json")
			var rep struct {
				Config struct{ Sandboxes map[string]resolvedSandbox }
			}
			if err := json.Unmarshal([]byte(v.stdout), &rep); v.code != 0 || err != nil ||
				len(rep.Config.Sandboxes) == 0 {
				t.Fatalf("sbf validate: exit %d (%v), %d sandboxes\n%s%s", v.code, err, len(rep.Config.Sandboxes),
					v.stdout, v.stderr)
			}
			p := sbf(t, env, "plan", "-C", dir, "--set", "vm.driver=sim", "--detailed-exitcode")
			want := "Plan: " + strconv.Itoa(len(rep.Config.Sandboxes)) + " to add"
			if p.code != 2 || !strings.Contains(p.stdout, want) {
				t.Fatalf("sbf plan --detailed-exitcode: exit %d, want 2 and %q\n%s%s", p.code, want, p.stdout, p.stderr)
			}
			if check := exampleChecks[name]; check != nil {
				check(t, dir, rep.Config.Sandboxes, p.stdout)
			}
		})
	}
}

// exampleChecks hold each example to what its README promises.
var exampleChecks = map[string]func(t *testing.T, dir string, sandboxes map[string]resolvedSandbox, plan string){
	"multi-sandbox": func(t *testing.T, _ string, sbs map[string]resolvedSandbox, _ string) {
		b, d := sbs["build"], sbs["dev"]
		if len(sbs) != 2 || b.CPUs == d.CPUs || b.Memory == d.Memory || b.TTL == d.TTL {
			t.Errorf("want two sandboxes of different shapes and TTLs, got %+v", sbs)
		}
	},
	"web-mysql-redis": func(t *testing.T, dir string, sbs map[string]resolvedSandbox, plan string) {
		web := sbs["web"]
		if !web.Compose || !slices.Equal(web.Services, []string{"mysql", "redis"}) {
			t.Errorf("web = %+v, want compose and services mysql, redis", web)
		}
		for _, step := range []string{"services", "env", "compose"} {
			if !strings.Contains(plan, "web  "+step) {
				t.Errorf("the plan lacks the %s step:\n%s", step, plan)
			}
		}
		assertAppGetsConnectionURLs(t, dir)
	},
}

// The app's compose file must hand the injected URLs to the app: loaded
// with them, its web service's environment holds them.
func assertAppGetsConnectionURLs(t *testing.T, dir string) {
	env := map[string]string{"DATABASE_URL": "mysql://root:pw@db:3306/shop", "REDIS_URL": "redis://cache:6379/0"}
	p, err := composefile.LoadProject(context.Background(), guest.LoadOptions{
		Root: dir, Compose: spec.Compose{Files: []string{"compose.yaml"}}, Sandbox: "web", Env: env,
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range env {
		if !strings.Contains(string(p.Resolved), k+": "+v) {
			t.Errorf("the web service does not get %s:\n%s", k, p.Resolved)
		}
	}
}
