package composefile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/drivers/guest/composerun"
	"github.com/sandboxforge/sbf/internal/confine"
	"github.com/sandboxforge/sbf/spec"
)

// The test binary is also the loader child, as sbf-server is. It ends
// with syscall.Exit: under -race, os.Exit waits a second for the race
// detector's report, and its environment (none) cannot say otherwise.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == composerun.Command {
		syscall.Exit(Child(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func loadInChild(t testing.TB, o guest.LoadOptions) (*guest.Project, string, error) {
	t.Helper()
	var said []string
	p, err := composerun.Load(context.Background(), os.Args[0], o, func(format string, args ...any) {
		said = append(said, fmt.Sprintf(format, args...))
	})
	return p, strings.Join(said, "\n"), err
}

// Every fixture loads in the confined child as it does in process: after
// its start, the loader needs nothing but the workspace.
func TestFixturesLoadTheSameInTheConfinedChild(t *testing.T) {
	for _, name := range []string{"webapp-build", "profiles", "env-files", "extends", "networks-volumes",
		"resources", "secrets-configs", "wordpress", "minimal", "required-var", "broken-yaml", "unknown-key"} {
		t.Run(name, func(t *testing.T) {
			o := guest.LoadOptions{Root: filepath.Join("testdata", "compose", name), Sandbox: "api",
				Compose: spec.Compose{Files: []string{"compose.yaml"}}, Env: map[string]string{"DB_PASS": "p"}}
			want, wantErr := LoadProject(context.Background(), o)
			got, said, err := loadInChild(t, o)
			if fmt.Sprint(wantErr) != fmt.Sprint(err) {
				t.Fatalf("in process: %v\nin the child: %v", wantErr, err)
			}
			if want != nil && (got.Bundle != want.Bundle || string(got.Resolved) != string(want.Resolved) ||
				!slices.Equal(got.Extra, want.Extra)) {
				t.Errorf("the child's project differs:\n%+v\n%+v", got, want)
			}
			if confine.Probe().Full() && !strings.Contains(said, "loaded in a child: Landlock ABI") {
				t.Errorf("the child did not say it was confined: %q", said)
			}
		})
	}
}

// The child interpolates with what the request carries: sbf's own
// environment only when use_process_env says so.
func TestTheChildSeesSbfsEnvironmentOnlyWithUseProcessEnv(t *testing.T) {
	t.Setenv("SBF_CHILD_TEST_SECRET", "s3cret")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "compose.yaml"),
		[]byte("services:\n  a:\n    image: \"x:${SBF_CHILD_TEST_SECRET:-unset}\"\n"), 0o644)
	for _, use := range []bool{false, true} {
		p, _, err := loadInChild(t, guest.LoadOptions{Root: dir, Sandbox: "a", Environ: os.Environ(),
			Compose: spec.Compose{Files: []string{"compose.yaml"}, UseProcessEnv: use}})
		want := map[bool]string{false: "x:unset", true: "x:s3cret"}[use]
		if err != nil || !strings.Contains(string(p.Resolved), want) {
			t.Errorf("use_process_env %v: want %s: %v\n%s", use, want, err, p.Resolved)
		}
	}
}

// The child answers an escape as the process would, positions and all.
func TestTheChildRefusesEscapesWithPositions(t *testing.T) {
	w := newEscapeWorld(t)
	w.write("ws/compose.yaml", "services:\n  web:\n    image: x\n    label_file: /proc/self/environ\n"+
		"    env_file: "+w.secret+"\n")
	_, _, err := loadInChild(t, guest.LoadOptions{Root: w.ws, Sandbox: "a",
		Compose: spec.Compose{Files: []string{"compose.yaml"}}})
	problems := problemsOf(err)
	if len(problems) != 2 || problems[0].Line != 4 || problems[1].Line != 5 {
		t.Fatalf("got %v", err)
	}
}

// The cost of the child: sbf-server starts a process per load. Measured
// against the same load in process (see docs/design-notes.md).
func BenchmarkLoadInProcess(b *testing.B) {
	o := benchOptions()
	for b.Loop() {
		if _, err := LoadProject(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadInTheConfinedChild(b *testing.B) {
	o := benchOptions()
	for b.Loop() {
		if _, _, err := loadInChild(b, o); err != nil {
			b.Fatal(err)
		}
	}
}

func benchOptions() guest.LoadOptions {
	return guest.LoadOptions{Root: filepath.Join("testdata", "compose", "webapp-build"), Sandbox: "api",
		Compose: spec.Compose{Files: []string{"compose.yaml"}}}
}
