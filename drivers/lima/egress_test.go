package lima

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// The guest's egress script restarts Docker only when its proxy setting
// changed: a VM started again under the same policy (a fork's child, whose
// containers run on from its source's memory) keeps its containers.
func TestTheGuestsDockerRestartsOnlyWhenItsProxyChanged(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	os.MkdirAll(bin, 0o755)
	calls := filepath.Join(root, "systemctl.log")
	fake := "#!/bin/sh\necho \"$*\" >> " + calls + "\n"
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	restarts := func(e *drivers.Egress) int {
		t.Helper()
		script := strings.ReplaceAll(guestEgressScript(e), "/etc/", root+"/etc/")
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the egress script: %v\n%s", err, out)
		}
		log, _ := os.ReadFile(calls)
		os.Remove(calls)
		return strings.Count(string(log), "restart docker")
	}
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	allow := &drivers.Egress{Mode: "allowlist", Allow: []string{"example.com"}}
	for _, step := range []struct {
		what   string
		policy *drivers.Egress
		want   int
	}{
		{"a first allowlist", allow, 1},
		{"the same allowlist again (a restart, a fork's child)", allow, 0},
		{"the policy lifted", nil, 1},
		{"still none", nil, 0},
	} {
		if got := restarts(step.policy); got != step.want {
			t.Errorf("%s: Docker restarted %d times, want %d", step.what, got, step.want)
		}
	}
}
