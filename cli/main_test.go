package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/testutil"
)

type result struct {
	stdout, stderr string
	code           int
}

// sbf runs the CLI in-process with a private HOME (one per test, so the
// host state and the sim's world persist between its commands), so no
// test reads the developer's global config. Tests are the operator here:
// they allow the sim (SBF_ENABLE_SIM=1) unless env says otherwise.
func sbf(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return sbfWithStdin(t, env, strings.NewReader(""), args...)
}

// sbfWithStdin is sbf reading stdin.
func sbfWithStdin(t *testing.T, env map[string]string, stdin io.Reader, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, testGetenv(t, env), stdin, &out, &errb)
	return result{out.String(), errb.String(), code}
}

// testGetenv is the environment of an in-process sbf of this test: env,
// then a HOME of its own, the sim allowed and sbf-server at hand.
func testGetenv(t *testing.T, env map[string]string) func(string) string {
	testutil.CoverSources(t) // its SBF_SERVER is the sbf-server built from them
	home := testHome(t)
	return func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		switch k {
		case "HOME":
			return home
		case policy.EnableSimVar:
			return "1"
		case "SBF_SERVER": // compose files load in sbf-server, as for the real sbf
			return serverBinary
		}
		return ""
	}
}

var homes sync.Map // *testing.T → its HOME

func testHome(t *testing.T) string {
	if h, ok := homes.Load(t); ok {
		return h.(string)
	}
	h := t.TempDir()
	homes.Store(t, h)
	return h
}

// inProcessSimWorld is where the sim keeps a workspace's VMs for an in-process
// sbf of this test.
func inProcessSimWorld(t *testing.T, root string) string {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	return sim.WorldDir(filepath.Join(testHome(t), ".local", "state", "sandboxforge"), real)
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestValidateEmptyFolderJSON(t *testing.T) {
	dir := t.TempDir()
	r := sbf(t, nil, "validate", "-C", dir, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep struct {
		Valid         bool              `json:"valid"`
		WorkspaceRoot string            `json:"workspace_root"`
		WorkspaceID   string            `json:"workspace_id"`
		Sources       []string          `json:"sources"`
		Config        map[string]any    `json:"config"`
		Errors        []json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	vm := rep.Config["vm"].(map[string]any)
	if !rep.Valid || len(rep.Sources) != 1 || rep.Sources[0] != "defaults" || rep.Errors == nil ||
		len(rep.Errors) != 0 {
		t.Errorf("report = %+v", rep)
	}
	if vm["cpus"] != 1.0 || vm["memory_gib"] != 2.0 || vm["template"] != "template:docker" {
		t.Errorf("vm = %v, want v1 defaults under TOML key names", vm)
	}
	if !strings.HasPrefix(rep.WorkspaceID, "ws_") || !filepath.IsAbs(rep.WorkspaceRoot) {
		t.Errorf("identity = %s %s", rep.WorkspaceRoot, rep.WorkspaceID)
	}
}

func TestValidateReportsEveryMistakeInEveryLayer(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "[vm]\ncpus = true\nunknwon = 3\n")
	write(t, filepath.Join(dir, ".sandboxforge.local.toml"), "[vm]\nvm_type = \"kvm\"\n")
	r := sbf(t, nil, "validate", "-C", dir, "--json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
	}
	var rep struct {
		Valid  bool
		Config any
		Errors []struct {
			File, Key, Message string
			Line, Column       int
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	want := []string{".sandboxforge.toml:2:8:vm.cpus", ".sandboxforge.toml:3:1:vm.unknwon",
		".sandboxforge.local.toml:2:11:vm.vm_type"}
	if rep.Valid || rep.Config != nil || len(rep.Errors) != len(want) {
		t.Fatalf("report = %+v", rep)
	}
	for i, e := range rep.Errors {
		got := filepath.Base(e.File) + ":" + strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Column) + ":" + e.Key
		if got != want[i] {
			t.Errorf("error %d at %s, want %s (%s)", i, got, want[i], e.Message)
		}
	}

	human := sbf(t, nil, "validate", "-C", dir)
	if human.code != 1 || human.stdout != "" || !strings.Contains(human.stderr,
		".sandboxforge.toml:3:1: vm.unknwon: is not supported (allowed: arch, cpus,") ||
		!strings.Contains(human.stderr, "Invalid: 3 problems in 2 files.") {
		t.Errorf("human output (problems on stderr):\n%s---\n%s", human.stdout, human.stderr)
	}
}

func TestValidateSetOverrides(t *testing.T) {
	dir := t.TempDir()
	r := sbf(t, nil, "validate", "-C", dir, "--json", "--set", "vm.cpus=4")
	if r.code != 0 || !strings.Contains(r.stdout, `"cpus": 4`) || !strings.Contains(r.stdout, `"request_overrides"`) {
		t.Errorf("exit %d\n%s", r.code, r.stdout)
	}
	if r := sbf(t, nil, "validate", "-C", dir, "--set", "novalue"); r.code != 2 {
		t.Errorf("malformed --set: exit %d, want 2", r.code)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"validate", "--bogus"}, {"validate", "extra"}, {"nosuchcommand"}, {"init",
		"--driver", "kvm"}} {
		if r := sbf(t, nil, args...); r.code != 2 {
			t.Errorf("sbf %v: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
	}
}

func TestGlobalConfigFromXDG(t *testing.T) {
	dir, xdg := t.TempDir(), t.TempDir()
	write(t, filepath.Join(xdg, "sandboxforge", "config.toml"), "[vm]\ncpus = 3\n")
	r := sbf(t, map[string]string{"XDG_CONFIG_HOME": xdg}, "validate", "-C", dir, "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"cpus": 3`) {
		t.Errorf("exit %d\n%s", r.code, r.stdout)
	}
}

func TestInitWritesAValidSpecAndNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".gitignore"), "node_modules\n.sandboxforge.local.toml")
	if r := sbf(t, nil, "init", "-C", dir, "--driver", "SIM"); r.code != 0 {
		t.Fatalf("init: exit %d: %s", r.code, r.stderr)
	}
	if r := sbf(t, nil, "validate", "-C", dir, "--json"); r.code != 0 ||
		!strings.Contains(r.stdout, `"driver": "sim"`) ||
		!strings.Contains(r.stdout, `"dev": {`) {
		t.Fatalf("the starter spec does not validate with one sandbox: exit %d\n%s", r.code, r.stdout)
	}
	gi, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if string(gi) != "node_modules\n.sandboxforge.local.toml\n.sandboxforge/\n" {
		t.Errorf(".gitignore = %q", gi)
	}
	if _, err := os.Stat(filepath.Join(dir, schemaFileName)); err != nil {
		t.Errorf("schema for the #:schema line: %v", err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, ".sandboxforge.toml"))
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "# mine\n")
	r := sbf(t, nil, "init", "-C", dir)
	after, _ := os.ReadFile(filepath.Join(dir, ".sandboxforge.toml"))
	if r.code != 1 || string(after) != "# mine\n" || !strings.Contains(r.stderr, "never overwrites") {
		t.Errorf("second init: exit %d, stderr %q, file %q (first was %d bytes)", r.code, r.stderr, after, len(before))
	}
}

func TestSchemaIsJSON(t *testing.T) {
	r := sbf(t, nil, "schema")
	var s map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil || s["properties"] == nil {
		t.Errorf("exit %d, output not a schema:\n%.200s", r.code, r.stdout)
	}
}

func TestVersion(t *testing.T) {
	r := sbf(t, nil, "version", "--json")
	var v map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || v["version"] == "" || v["go"] == "" {
		t.Errorf("exit %d: %s", r.code, r.stdout)
	}
	for _, k := range []string{"version", "commit", "date", "go"} {
		if _, ok := v[k].(string); !ok {
			t.Errorf("version --json has no %s: %s", k, r.stdout)
		}
	}
	line := sbf(t, nil, "version")
	flag := sbf(t, nil, "--version")
	if line.code != 0 || flag.code != 0 || line.stdout != flag.stdout ||
		!strings.HasPrefix(line.stdout, "sbf "+v["version"].(string)+" (commit ") {
		t.Errorf("sbf version: exit %d %q; sbf --version: exit %d %q", line.code, line.stdout, flag.code, flag.stdout)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "[vm]\ndriver = \"sim\"\n")
	if doctor := sbf(t, nil, "doctor", "-C", dir); !strings.HasSuffix(doctor.stdout, "\n"+line.stdout) {
		t.Errorf("sbf doctor does not end with sbf's version:\n%s", doctor.stdout)
	}
}

func TestExampleValidates(t *testing.T) {
	if r := sbf(t, nil, "validate", "-C", "../examples/hello"); r.code != 0 {
		t.Errorf("examples/hello: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
