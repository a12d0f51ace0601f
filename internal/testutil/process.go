package testutil

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/lazyre"
)

// BuildSBF builds sbf and sbf-server into a new temporary folder (for
// tests that need a real process) and returns the folder; a TestMain
// removes it when the tests end.
func BuildSBF(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := recordSources(".."); err != nil { // before the build: what it is made of
		os.RemoveAll(dir)
		return "", err
	}
	// One go build for both: the packages they share are loaded and checked once. A folder
	// as -o takes each command under its own name (sbf, sbf-server).
	if out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"../cmd/sbf", "../cmd/sbf-server").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("building sbf and sbf-server: %w\n%s", err, out)
	}
	return dir, nil
}

var servingMCP = lazyre.New(`serving MCP on (\S+) \(every request needs the bearer token in (.+)\)$`)

// Served is a started `sbf serve`'s MCP endpoint: its URL and the file
// holding the bearer token every request must carry.
type Served struct {
	URL, TokenFile string
}

// Token reads the bearer token.
func (s Served) Token(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(s.TokenFile)
	if err != nil {
		t.Fatalf("reading sbf serve's bearer token: %v", err)
	}
	return strings.TrimSpace(string(data))
}

// Header is the Authorization header a client sends.
func (s Served) Header(t testing.TB) map[string]string {
	return map[string]string{"Authorization": "Bearer " + s.Token(t)}
}

// Serving reads a starting `sbf serve`'s stderr until it names its MCP URL
// and token file, failing t when the process ends first or takes longer
// than wait. The rest of stderr is drained so the process never blocks on
// it.
func Serving(t testing.TB, stderr io.Reader, wait time.Duration) Served {
	t.Helper()
	found := make(chan Served, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := servingMCP.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- Served{URL: m[1], TokenFile: m[2]}
				sent = true
			}
		}
		close(found)
	}()
	select {
	case s, ok := <-found:
		if !ok {
			t.Fatal("sbf serve exited before listening")
		}
		return s
	case <-clock.Real{}.After(wait): // a test's deadline is real time
		t.Fatalf("sbf serve did not listen within %s", wait)
	}
	return Served{}
}
