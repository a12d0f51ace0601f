package escape

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// sbfBinary is the real sbf, built once for the suite.
var sbfBinary string

func TestMain(m *testing.M) {
	dir, err := testutil.BuildSBF("sbf-escape-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sbfBinary = filepath.Join(dir, "sbf")
	code := m.Run()
	os.RemoveAll(dir)
	if changed := testutil.SourcesChangedSinceBuild(); len(changed) > 0 && code == 0 {
		// go test would keep this pass under the changed files, for an sbf these tests never ran.
		fmt.Fprintf(os.Stderr, "sbf's sources changed while its tests ran (%s): run them again\n",
			strings.Join(changed, ", "))
		code = 1
	}
	os.Exit(code)
}

// world is a host as an attack finds it: the operator's workspace, a folder
// it does not serve, and a canary folder beside both whose content no
// attack may change (nor create a pwned-* marker in).
// Every attack has a world of its own, and its processes and ports, so
// the attacks run in parallel (t.Parallel): they wait on processes more
// than they use the CPU.
type world struct {
	t                      *testing.T
	base, ws, other, state string
	canary                 string
	env                    []string
	before                 map[string]string
	// token is the bearer token of the last server serve started: every
	// HTTP caller needs it, and attack sends it.
	token string
}

func newWorld(t *testing.T, wsSpec string) *world {
	t.Helper()
	testutil.CoverSources(t) // the sbf each attack runs is built from them
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, base: base, ws: filepath.Join(base, "ws"), other: filepath.Join(base, "other"),
		state: filepath.Join(base, "state"), canary: filepath.Join(base, "canary")}
	w.write("ws/.sandboxforge.toml", wsSpec)
	w.write("other/.sandboxforge.toml", "[vm]\ndriver = \"sim\"\n")
	w.write("canary/secret", "TOKEN=hunter2\n")
	w.write("canary/notes/today.txt", "nothing happened\n")
	w.env = []string{"HOME=" + filepath.Join(base, "home"), "SBF_STATE_HOME=" + w.state,
		"PATH=" + os.Getenv("PATH"), "NO_COLOR=1"}
	w.before = snapshot(t, w.canary)
	t.Cleanup(w.canaryUntouched)
	return w
}

func (w *world) write(rel, content string) {
	w.t.Helper()
	p := filepath.Join(w.base, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// tokenFile writes a bearer token file as sbf accepts one (the owner's
// alone, 128 bits at least) and returns its path.
func (w *world) tokenFile(token string) string {
	w.t.Helper()
	p := filepath.Join(w.base, "token")
	os.Remove(p) // a new file: WriteFile keeps an old one's mode
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *world) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(w.base, rel))
	return err == nil
}

// canaryUntouched fails the test when anything in the canary folder
// changed, appeared or went.
func (w *world) canaryUntouched() {
	after := snapshot(w.t, w.canary)
	if !maps.Equal(w.before, after) {
		w.t.Errorf("the canary outside the workspace changed:\nbefore %v\nafter  %v", w.before, after)
	}
}

// snapshot maps every path below dir to its content or link target.
func snapshot(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

type result struct {
	stdout, stderr string
	code           int
}

// sbf runs the real binary in the workspace with the world's environment
// plus extra. An attack that makes sbf run away (a copy into itself) fails
// the test after two minutes instead of outliving it.
func (w *world) sbf(extra []string, args ...string) result {
	w.t.Helper()
	return w.run(2*time.Minute, sbfBinary, extra, args...)
}

// run runs program in the workspace with the world's environment plus
// extra, failing the test when it runs longer than limit (killed).
func (w *world) run(limit time.Duration, program string, extra []string, args ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := exec.CommandContext(ctx, program, args...)
	c.Dir = w.ws
	c.Env = append(append([]string{}, w.env...), extra...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if ctx.Err() != nil {
		w.t.Fatalf("%s %v did not finish within %s (killed)", filepath.Base(program), args, limit)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// serve starts `sbf serve` for the world's workspace and returns its URL;
// its bearer token is w.token.
func (w *world) serve(extra []string, args ...string) string {
	w.t.Helper()
	c := exec.Command(sbfBinary, append([]string{"-C", w.ws, "serve", "127.0.0.1:0"}, args...)...)
	c.Env = append(append([]string{}, w.env...), extra...)
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	})
	served := testutil.Serving(w.t, stderr, 30*time.Second)
	w.token = served.Token(w.t)
	return served.URL
}

const tsClientDir = "../mcpserver/testdata/tsclient"

// tsNode is node about to run script of the official TypeScript SDK's client (installed
// once, outside the checkout: testutil.NPMCI).
func tsNode(t testing.TB, script string) *exec.Cmd {
	t.Helper()
	c := exec.Command("node", script)
	c.Dir = testutil.NPMCI(t, tsClientDir, filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	return c
}

// attack runs one phase of escape.mjs with the official TypeScript SDK.
func (w *world) attack(phase, mode, target string, extra ...string) {
	w.t.Helper()
	c := tsNode(w.t, "escape.mjs")
	if mode == "http" && !slices.ContainsFunc(extra, func(e string) bool { return strings.HasPrefix(e, "ESC_TOKEN=") }) {
		extra = append(extra, "ESC_TOKEN="+w.token)
	}
	c.Env = append(append([]string{}, w.env...), append(extra, "ESC_PHASE="+phase, "ESC_MODE="+mode,
		"ESC_TARGET="+target, "ESC_WS="+w.ws, "ESC_OTHER="+w.other, "ESC_CANARY="+w.canary)...)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		w.t.Fatalf("escape.mjs %s over %s: %v\n%s", phase, mode, err, out)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
