package external

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
)

// testEnv runs this test binary as the kubevirt plugin, serving a sim world.
func testEnv(t *testing.T, extra map[string]string) drivers.Env {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	vars := map[string]string{"SBF_KUBEVIRT_DRIVER": self, "SBF_EXTERNAL_TEST_PLUGIN": t.TempDir()}
	for k, v := range extra {
		vars[k] = v
	}
	t.Setenv("SBF_EXTERNAL_TEST_PLUGIN", vars["SBF_EXTERNAL_TEST_PLUGIN"])
	t.Setenv("SBF_EXTERNAL_TEST_PLUGIN_DIE", vars["SBF_EXTERNAL_TEST_PLUGIN_DIE"])
	return drivers.Env{Getenv: func(k string) string { return vars[k] }, StateDir: state, Workspace: t.TempDir()}
}

func TestThePluginRunsAsAProcessOfItsOwn(t *testing.T) {
	env := testEnv(t, nil)
	reg, _ := drivers.Lookup("kubevirt")
	d, err := reg.New(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	defer d.(*Driver).Close()
	ctx := context.Background()
	s := drivers.Spec{Name: drivers.InstanceName("ws_c0ffee00aabb", "a"), CPUs: 1, MemoryGiB: 1, DiskGiB: 1}
	must(t, d.Create(ctx, s))
	list, err := d.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != s.Name {
		t.Fatalf("List: %+v, %v", list, err)
	}
	if _, err := os.Stat(filepath.Join(env.StateDir, "kubevirt", "id_ed25519")); err != nil {
		t.Errorf("the guests' key was not made: %v", err)
	}
}

func TestAPluginThatDiesSaysWhy(t *testing.T) {
	env := testEnv(t, map[string]string{"SBF_EXTERNAL_TEST_PLUGIN_DIE": "1"})
	reg, _ := drivers.Lookup("kubevirt")
	_, err := reg.New(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), "exit status 7") ||
		!strings.Contains(err.Error(), "giving up on purpose") {
		t.Fatalf("New with a plugin that dies: %v; want its exit status and stderr", err)
	}
}

func TestTheWorkspaceIdIsTheSpecs(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	wantRoot, wantID, err := spec.WorkspaceIdentity(link)
	root, id, err2 := workspaceIdentity(link)
	if err != nil || err2 != nil || root != wantRoot || id != wantID {
		t.Errorf("workspaceIdentity = %s %s %v; spec says %s %s %v", root, id, err2, wantRoot, wantID, err)
	}
}
