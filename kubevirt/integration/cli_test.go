package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxforge/sbf/kubevirt/driver"
)

// sbf itself, as a person runs it: it finds sbf-kubevirt next to its own executable,
// asks it in sbf doctor, and converges and destroys a sandbox through it.
func TestSbfFindsThePluginBesideItself(t *testing.T) {
	t.Parallel()
	s := newSpace(t, quick)
	sbf := sbfBinary(t)
	ws, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, ".sandboxforge.toml"), []byte(oneSandbox), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(sbf, append([]string{"-C", ws}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "KUBECONFIG=" + s.kubeconfig,
			"SBF_KUBEVIRT_NAMESPACE=" + s.ns, "SBF_KUBEVIRT_POLL=50ms"}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	out, _ := run("doctor", "--json")
	var rep struct {
		Drivers []struct {
			Driver string
			Usable bool
			Checks []struct{ Name, Status string }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("sbf doctor --json: %v\n%s", err, out)
	}
	if len(rep.Drivers) != 1 || rep.Drivers[0].Driver != "kubevirt" || !rep.Drivers[0].Usable ||
		len(rep.Drivers[0].Checks) != 5 {
		t.Errorf("sbf doctor: %s", out)
	}

	if out, err := run("apply", "--auto-approve"); err != nil {
		t.Fatalf("sbf apply: %v\n%s", err, out)
	}
	w := &workspace{space: s}
	if vms := w.vms(t); len(vms) != 1 || vms[0].Labels[driver.LabelSandbox] != "api" {
		t.Fatalf("after sbf apply: %d VMs", len(vms))
	}
	if out, err := run("status"); err != nil || !strings.Contains(out, "running") {
		t.Errorf("sbf status: %v\n%s", err, out)
	}
	if out, err := run("destroy", "--auto-approve"); err != nil {
		t.Fatalf("sbf destroy: %v\n%s", err, out)
	}
	if vms := w.vms(t); len(vms) != 0 {
		t.Errorf("after sbf destroy: %d VMs", len(vms))
	}
}

var buildSbf sync.Mutex

// sbfBinary is sbf built from the main module beside the plugin, where sbf finds it.
func sbfBinary(t *testing.T) string {
	t.Helper()
	buildSbf.Lock()
	defer buildSbf.Unlock()
	sbf := filepath.Join(filepath.Dir(plugin), "sbf")
	if _, err := os.Stat(sbf); err != nil {
		build := exec.Command("go", "build", "-o", sbf, "./cmd/sbf")
		build.Dir = "../.." // sbf is built in its own module, which links no client-go
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building sbf: %v\n%s", err, out)
		}
	}
	return sbf
}
