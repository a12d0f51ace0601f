package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/testutil"
)

const taploDir = "testdata/taplo"

// ensureTaplo installs @taplo/cli, the TOML toolkit behind Even Better
// TOML (pinned by the committed package-lock.json), and returns the command that runs it.
func ensureTaplo(t *testing.T) []string {
	t.Helper()
	cli := filepath.Join("node_modules", "@taplo", "cli", "dist", "cli.js")
	return []string{"node", filepath.Join(testutil.NPMCI(t, taploDir, cli), cli)}
}

// taploCheck runs `taplo check` the way an editor checks a file: against
// the schema its '#:schema' line names, with no config file and no online
// catalog.
func taploCheck(t *testing.T, dir string, files ...string) (string, error) {
	t.Helper()
	argv := append(ensureTaplo(t), append([]string{"check", "--no-auto-config", "--colors", "never"}, files...)...)
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	return string(out), err
}

// schemaLine is the first line of a spec that names a schema.
func schemaLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	ref, ok := strings.CutPrefix(first, "#:schema ")
	if !ok {
		t.Errorf("%s: the first line is %q, want '#:schema PATH'", path, first)
	}
	return ref
}

func TestExamplesMatchTheSchemaInTaplo(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	repo, _ := filepath.Abs("..")
	var files []string
	for _, name := range examples(t) {
		file := filepath.Join("examples", name, ".sandboxforge.toml")
		ref := filepath.Join(repo, "examples", name, schemaLine(t, filepath.Join(repo, file)))
		if ref != filepath.Join(repo, "docs", "sandboxforge.schema.json") {
			t.Errorf("%s names %s, want the committed docs/sandboxforge.schema.json", file, ref)
		}
		files = append(files, file)
	}
	if out, err := taploCheck(t, repo, files...); err != nil {
		t.Fatalf("taplo check %s: %v\n%s", strings.Join(files, " "), err, out)
	}

	// The same run fails when a file breaks the schema, so the pass above
	// means something.
	tmp := t.TempDir()
	schema, _ := os.ReadFile(filepath.Join(repo, "docs", "sandboxforge.schema.json"))
	hello, _ := os.ReadFile(filepath.Join(repo, "examples", "hello", ".sandboxforge.toml"))
	write(t, filepath.Join(tmp, "docs", "sandboxforge.schema.json"), string(schema))
	write(t, filepath.Join(tmp, "examples", "broken", ".sandboxforge.toml"), string(hello)+"cpus_typo = 2\n")
	out, err := taploCheck(t, tmp, "examples/broken/.sandboxforge.toml")
	if err == nil || !strings.Contains(out, "cpus_typo") {
		t.Errorf("taplo accepted an unknown key: %v\n%s", err, out)
	}
}

// What 'sbf init' writes is checked by Taplo in a fresh clone, where
// nothing git ignores exists.
func TestInitSchemaWorksAfterAClone(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	origin, clone := t.TempDir(), filepath.Join(t.TempDir(), "clone")
	git(t, origin, "init", "-q")
	if r := sbf(t, nil, "init", "-C", origin, "--driver", "sim"); r.code != 0 {
		t.Fatalf("sbf init: exit %d: %s", r.code, r.stderr)
	}
	git(t, origin, "add", "-A")
	git(t, origin, "-c", "user.name=sbf", "-c", "user.email=sbf@example.invalid", "commit", "-q", "-m", "sandboxes")
	git(t, "", "clone", "-q", origin, clone)
	if out, err := taploCheck(t, clone, ".sandboxforge.toml"); err != nil {
		t.Errorf("taplo check in a clone: %v\n%s", err, out)
	}
	write(t, filepath.Join(clone, ".sandboxforge.toml"), "#:schema ./"+schemaFileName+"\n[vm]\ncpus = \"two\"\n")
	if out, err := taploCheck(t, clone, ".sandboxforge.toml"); err == nil ||
		!strings.Contains(out, `"two" is not of type "integer"`) {
		t.Errorf("taplo accepted cpus = \"two\": %v\n%s", err, out)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
