//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// limaLogsOnFailure logs the end of each live instance's host agent and
// serial logs when t failed, before its deferred deletes take them: a VM
// that stopped answering says why only there.
func limaLogsOnFailure(t *testing.T) {
	if !t.Failed() {
		return
	}
	if ps, err := exec.Command("pgrep", "-a", "-u", strconv.Itoa(os.Getuid()), "sbf").Output(); err == nil {
		t.Logf("sbf processes of this user:\n%s", ps) // a loop left running by an earlier server acts too
	}
	home := os.Getenv("LIMA_HOME")
	dirs, _ := os.ReadDir(home)
	for _, d := range dirs {
		if !d.IsDir() || strings.HasPrefix(d.Name(), "_") {
			continue
		}
		for _, log := range []string{"ha.stderr.log", "serial.log"} {
			data, err := os.ReadFile(filepath.Join(home, d.Name(), log))
			if err == nil {
				t.Logf("%s/%s, its last lines:\n%s", d.Name(), log, lastLines(string(data), 40))
			}
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
