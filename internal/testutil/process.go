package testutil

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// BuildSBF builds sbf and sbf-server into a new temporary folder (for
// tests that need a real process) and returns the folder; a TestMain
// removes it when the tests end.
func BuildSBF(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	for bin, pkg := range map[string]string{"sbf": "../cmd/sbf", "sbf-server": "../cmd/sbf-server"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, bin), pkg).CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("building %s: %w\n%s", pkg, err, out)
		}
	}
	return dir, nil
}

var servingMCP = regexp.MustCompile(`serving MCP on (\S+)`)

// ServeURL reads a starting `sbf serve`'s stderr until it names its MCP
// URL, failing t when the process ends first or takes longer than wait.
// The rest of stderr is drained so the process never blocks on it.
func ServeURL(t testing.TB, stderr io.Reader, wait time.Duration) string {
	t.Helper()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := servingMCP.FindStringSubmatch(sc.Text()); m != nil && !sent {
				urls <- m[1]
				sent = true
			}
		}
		close(urls)
	}()
	select {
	case u, ok := <-urls:
		if !ok {
			t.Fatal("sbf serve exited before listening")
		}
		return u
	case <-clock.Real{}.After(wait): // a test's deadline is real time
		t.Fatalf("sbf serve did not listen within %s", wait)
	}
	return ""
}
