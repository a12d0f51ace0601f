package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// init puts the schema beside the spec that names it (that git keeps it
// is TestInitSchemaWorksAfterAClone).
func TestInitWritesACommittableSchema(t *testing.T) {
	dir := t.TempDir()
	r := sbf(t, nil, "init", "-C", dir, "--driver", "sim")
	if r.code != 0 || !strings.Contains(r.stdout, schemaFileName) {
		t.Fatalf("init: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if ref := schemaLine(t, filepath.Join(dir, ".sandboxforge.toml")); ref != "./"+schemaFileName {
		t.Errorf("#:schema %s, want ./%s", ref, schemaFileName)
	}
	got, err := os.ReadFile(filepath.Join(dir, schemaFileName))
	if err != nil || string(got) != sbf(t, nil, "schema").stdout {
		t.Errorf("%s is not what 'sbf schema' prints: %v", schemaFileName, err)
	}
}

func TestSchemaWriteRefreshes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, schemaFileName)
	write(t, path, "{}\n")
	r := sbf(t, nil, "schema", "-C", dir, "--write", schemaFileName)
	got, _ := os.ReadFile(path)
	if r.code != 0 || string(got) != sbf(t, nil, "schema").stdout || !strings.Contains(r.stdout, "Wrote "+path) {
		t.Fatalf("exit %d %q %q; file %.80q", r.code, r.stdout, r.stderr, got)
	}
	info, _ := os.Stat(path)
	if r := sbf(t, nil, "schema", "-C", dir, "--write", path); r.code != 0 || !strings.Contains(r.stdout, "up to date") {
		t.Errorf("second write: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if again, _ := os.Stat(path); !again.ModTime().Equal(info.ModTime()) {
		t.Error("an up-to-date schema was rewritten")
	}
	if r := sbf(t, nil, "schema", "--write", filepath.Join(dir, "no", "such", "dir.json")); r.code != 1 ||
		!strings.Contains(r.stderr, "writing the schema to") {
		t.Errorf("unwritable path: exit %d %q", r.code, r.stderr)
	}
}

// The docs tell people what init and the examples do (docs/spec.md, linked from the README).
func TestReadmeAgreesOnTheSchemaFile(t *testing.T) {
	readme, err := os.ReadFile("../docs/spec.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sbf schema --write " + schemaFileName, "#:schema ./" + schemaFileName,
		"examples/web-mysql-redis", "examples/multi-sandbox", "examples/gitops"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("docs/spec.md does not mention %q", want)
		}
	}
}
