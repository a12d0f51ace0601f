package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/spec"
)

func (h *harness) port(op SnapshotOp, sandbox, name, path string) (*SnapshotResult, error) {
	return h.eng.Snapshot(context.Background(), h.ws(), SnapshotRequest{Op: op, Sandbox: sandbox, Name: name,
		Path: path})
}

const twoSims = "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n"

func TestExportImportRestoreCarriesAFileToAnotherSandbox(t *testing.T) {
	h := newHarness(t, twoSims)
	h.mustApply()
	h.guestRun(t, "api", "mkdir -p work && echo exported > work/a.txt")
	h.mustSnapshot(t, SnapshotCreate, "api", "clean")
	out, err := h.port(SnapshotExport, "api", "clean", "exports/clean.snap")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(h.root, "exports", "clean.snap"); out.Path != want || out.Snapshot.Name != "clean" {
		t.Errorf("export: %+v", out)
	}
	if info, err := os.Stat(out.Path); err != nil || info.Size() == 0 || info.Mode().Perm() != 0o600 {
		t.Fatalf("the export file: %v %v", info, err)
	}
	if left, _ := filepath.Glob(filepath.Join(h.root, "exports", ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	h.guestRun(t, "web", "mkdir -p work && echo web > work/a.txt")
	in, err := h.port(SnapshotImport, "web", "moved", "exports/clean.snap")
	if err != nil {
		t.Fatal(err)
	}
	if in.Snapshot.Name != "moved" || in.Snapshot.Sandbox != "web" || in.Snapshot.SizeBytes == 0 {
		t.Errorf("import: %+v", in.Snapshot)
	}
	if got := h.guestRun(t, "web", "cat work/a.txt"); got != "web" {
		t.Errorf("an import changed the VM: %q", got)
	}
	if h.state(t).FindSnapshot("web", "moved") == nil {
		t.Error("the import is not recorded")
	}
	h.mustSnapshot(t, SnapshotRestore, "web", "moved")
	if got := h.guestRun(t, "web", "cat work/a.txt"); got != "exported" {
		t.Errorf("after restoring the import: %q", got)
	}
	if _, err := h.port(SnapshotImport, "web", "moved", "exports/clean.snap"); codeOf(err) != coded.SnapshotExists {
		t.Errorf("a second import of one name: %v", err)
	}
	h.mustSnapshot(t, SnapshotDelete, "api", "clean")
	if _, err := os.Stat(out.Path); err != nil {
		t.Errorf("deleting the snapshot took its export: %v", err)
	}
}

func TestExportAndImportPathsFollowTheHostPathRules(t *testing.T) {
	h := newHarness(t, twoSims)
	h.mustApply()
	h.mustSnapshot(t, SnapshotCreate, "api", "clean")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(h.root, "taken"), []byte("mine"), 0o644)
	os.Symlink(filepath.Join(h.root, "elsewhere"), filepath.Join(h.root, "link"))
	os.MkdirAll(filepath.Join(h.root, ".git"), 0o755)
	for _, p := range []string{filepath.Join(outside, "x.snap"), "../x.snap", "taken", "link", ".git/x",
		".sandboxforge.local.toml", ".sandboxforge/x"} {
		if _, err := h.port(SnapshotExport, "api", "clean", p); codeOf(err) != hostpath.Denied {
			t.Errorf("export to %s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(h.root, "taken")); string(b) != "mine" {
		t.Errorf("an existing file was overwritten: %q", b)
	}
	for _, p := range []string{"elsewhere", ".git/x", ".sandboxforge.local.toml"} {
		if _, err := os.Lstat(filepath.Join(h.root, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if _, err := h.port(SnapshotExport, "api", "nope", "n.snap"); codeOf(err) != coded.SnapshotNotFound {
		t.Errorf("export of a missing snapshot: %v", err)
	}

	if _, err := h.port(SnapshotExport, "api", "clean", "good.snap"); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(h.root, "good.snap"), filepath.Join(outside, "good.snap"))
	os.Symlink(filepath.Join(outside, "good.snap"), filepath.Join(h.root, "via-link.snap"))
	os.Symlink(filepath.Join(h.root, "taken"), filepath.Join(h.root, "inner-link.snap"))
	for p, code := range map[string]string{filepath.Join(outside, "good.snap"): hostpath.Denied,
		"via-link.snap": hostpath.Denied, "inner-link.snap": hostpath.Denied, "missing.snap": coded.InvalidArguments,
		".git": coded.InvalidArguments} {
		if _, err := h.port(SnapshotImport, "web", "in", p); codeOf(err) != code {
			t.Errorf("import from %s: %v (want %s)", p, err, code)
		}
	}
	if len(h.state(t).Snapshots) != 1 {
		t.Errorf("a refused import was recorded: %+v", h.state(t).Snapshots)
	}
	h.eng.Policy.AllowedPaths = []string{outside}
	if _, err := h.port(SnapshotImport, "web", "in", filepath.Join(outside, "good.snap")); err != nil {
		t.Errorf("import from an allowed folder: %v", err)
	}
}

// coldSim imports only into stopped instances, as Lima does, and notes
// the lifecycle calls it gets.
type coldSim struct {
	*sim.Driver
	calls *[]string
}

func (c coldSim) ImportSnapshot(ctx context.Context, instance, name, src string) error {
	list, err := c.List(ctx)
	if err != nil {
		return err
	}
	for _, in := range list {
		if in.Name == instance && in.Status == drivers.Running {
			*c.calls = append(*c.calls, "refused")
			return fmt.Errorf("importing into %s: %w", instance, drivers.ErrStopFirst)
		}
	}
	*c.calls = append(*c.calls, "import")
	return c.Driver.ImportSnapshot(ctx, instance, name, src)
}

func (c coldSim) Stop(ctx context.Context, name string) error {
	*c.calls = append(*c.calls, "stop")
	return c.Driver.Stop(ctx, name)
}

func (c coldSim) Start(ctx context.Context, s drivers.Spec) error {
	*c.calls = append(*c.calls, "start "+s.Name)
	return c.Driver.Start(ctx, s)
}

func TestABackendThatImportsOnlyIntoAStoppedVMGetsItStoppedAndStarted(t *testing.T) {
	h := newHarness(t, twoSims)
	h.mustApply()
	h.mustSnapshot(t, SnapshotCreate, "api", "clean")
	if _, err := h.port(SnapshotExport, "api", "clean", "clean.snap"); err != nil {
		t.Fatal(err)
	}
	var calls []string
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		if err != nil {
			return nil, err
		}
		return coldSim{Driver: d.(*sim.Driver), calls: &calls}, nil
	}
	if _, err := h.port(SnapshotImport, "web", "moved", "clean.snap"); err != nil {
		t.Fatal(err)
	}
	want := "refused stop import start " + h.instance("web")
	if got := strings.Join(calls, " "); got != want {
		t.Errorf("calls: %q, want %q", got, want)
	}
	if got := h.guestRun(t, "web", "echo up"); got != "up" {
		t.Errorf("web after the import: %q", got)
	}
}

// Issue 39: refusals that name no cause printed Go's "<nil>" (an import of
// a folder, a plan file of valid JSON without a format).
func TestRefusalsNeverSayNil(t *testing.T) {
	h := newHarness(t, twoSims)
	h.mustApply()
	os.MkdirAll(filepath.Join(h.root, "exports", "folder"), 0o755)
	_, err := h.port(SnapshotImport, "web", "x", "exports/folder")
	if err == nil || strings.Contains(err.Error(), "<nil>") || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("import of a folder: %v", err)
	}
	plan := filepath.Join(h.root, "plan.json")
	os.WriteFile(plan, []byte("{}"), 0o644)
	if _, err := ReadSavedPlan(plan); err == nil || strings.Contains(err.Error(), "<nil>") {
		t.Errorf("a plan file without a format: %v", err)
	}
}
