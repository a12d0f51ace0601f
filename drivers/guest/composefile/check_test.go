package composefile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/spec"
)

// escapeWorld is a workspace a guest wrote into, and beside it a canary
// folder the compose files must never reach.
type escapeWorld struct {
	t                  *testing.T
	base, ws, canary   string
	secret, canaryText string
}

func newEscapeWorld(t *testing.T) *escapeWorld {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &escapeWorld{t: t, base: base, ws: filepath.Join(base, "ws"), canary: filepath.Join(base, "canary"),
		canaryText: "CANARY_TOKEN=hunter2"}
	w.secret = filepath.Join(w.canary, "secret")
	w.write("canary/secret", w.canaryText+"\n")
	w.write("canary/base.yaml", "services:\n  b:\n    image: x\n    labels: {leak: \"${CANARY_TOKEN}\"}\n")
	w.write("canary/inc.yaml", "services:\n  inc:\n    image: x\n")
	w.write("ws/inside.env", "A=1\n")
	return w
}

func (w *escapeWorld) write(rel, content string) {
	w.t.Helper()
	p := filepath.Join(w.base, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *escapeWorld) link(rel, target string) {
	w.t.Helper()
	p := filepath.Join(w.base, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(target, p); err != nil {
		w.t.Fatal(err)
	}
}

func (w *escapeWorld) load(c spec.Compose, env map[string]string) (*guest.Project, error) {
	if c.Files == nil {
		c.Files = []string{"compose.yaml"}
	}
	return LoadProject(context.Background(), guest.LoadOptions{Root: w.ws, Compose: c, Sandbox: "api", Env: env})
}

// escapes are the attacks and their kin: a compose file (or the
// files around it) that would make the loader read a host file.
var escapes = []struct {
	name    string
	compose string
	setup   func(w *escapeWorld)
	want    []string // file:line:col: key, relative to the workspace
	spec    spec.Compose
	env     map[string]string
}{
	{name: "label_file /proc/self/environ",
		compose: "services:\n  web:\n    image: x\n    label_file: /proc/self/environ\n",
		want:    []string{"compose.yaml:4:17: services.web.label_file"}},
	{name: "label_file canary, list",
		compose: "services:\n  web:\n    image: x\n    label_file:\n      - inside.env\n      - CANARY\n",
		want:    []string{"compose.yaml:6:9: services.web.label_file[1]"}},
	{name: "env_file ../",
		compose: "services:\n  web:\n    image: x\n    env_file: ../canary/secret\n",
		want:    []string{"compose.yaml:4:15: services.web.env_file"}},
	{name: "env_file long form",
		compose: "services:\n  web:\n    image: x\n    env_file:\n      - path: ../canary/secret\n        required: false\n",
		want:    []string{"compose.yaml:5:15: services.web.env_file[0].path"}},
	{name: "include env_file",
		compose: "include:\n  - path: inc.yaml\n    env_file: CANARY\nservices:\n  web:\n    image: x\n",
		setup:   func(w *escapeWorld) { w.write("ws/inc.yaml", "services:\n  i:\n    image: \"x:${CANARY_TOKEN}\"\n") },
		want:    []string{"compose.yaml:3:15: include[0].env_file"}},
	{name: "include path",
		compose: "include:\n  - ../canary/inc.yaml\nservices:\n  web:\n    image: x\n",
		want:    []string{"compose.yaml:2:5: include[0]"}},
	{name: "include project_directory and its .env",
		compose: "include:\n  - path: inc.yaml\n    project_directory: ../canary\n",
		setup:   func(w *escapeWorld) { w.write("ws/inc.yaml", "services:\n  i:\n    image: x\n") },
		want:    []string{"compose.yaml:3:24: include[0].project_directory"}},
	{name: "configs file through a link",
		compose: "services:\n  web:\n    image: x\n    configs: [c]\nconfigs:\n  c:\n    file: ./cfg\n",
		setup:   func(w *escapeWorld) { w.link("ws/cfg", "../canary/secret") },
		want:    []string{"compose.yaml:7:11: configs.c.file"}},
	{name: "secrets file through a folder link",
		compose: "services:\n  web:\n    image: x\nsecrets:\n  s:\n    file: d/secret\n",
		setup:   func(w *escapeWorld) { w.link("ws/d", "../canary") },
		want:    []string{"compose.yaml:6:11: secrets.s.file"}},
	{name: "extends file",
		compose: "services:\n  web:\n    extends:\n      file: ../canary/base.yaml\n      service: b\n",
		want:    []string{"compose.yaml:4:13: services.web.extends.file"}},
	{name: "build context and dockerfile",
		compose: "services:\n  a:\n    build: ../canary\n  b:\n    build:\n      context: .\n" +
			"      dockerfile: CANARY\n      additional_contexts:\n        x: ../canary\n",
		want: []string{"compose.yaml:3:12: services.a.build", "compose.yaml:7:19: services.b.build.dockerfile",
			"compose.yaml:9:12: services.b.build.additional_contexts.x"}},
	{name: "build ssh keys, list and mapping",
		compose: "services:\n  a:\n    build:\n      context: .\n      ssh:\n        - default\n" +
			"        - key=../canary/secret\n  b:\n    build:\n      context: .\n      ssh:\n        k: ~/.ssh/id_rsa\n",
		want: []string{"compose.yaml:7:11: services.a.build.ssh[1]", "compose.yaml:12:12: services.b.build.ssh.k"}},
	{name: "bind mounts short and long",
		compose: "services:\n  web:\n    image: x\n    volumes:\n      - ../canary:/data\n" +
			"      - type: bind\n        source: CANARY\n        target: /s\n      - named:/n\n",
		want: []string{"compose.yaml:5:9: services.web.volumes[0]", "compose.yaml:7:17: services.web.volumes[1].source"}},
	{name: "develop watch",
		compose: "services:\n  web:\n    image: x\n    develop:\n      watch:\n        - path: ../canary\n" +
			"          action: sync\n          target: /app\n",
		want: []string{"compose.yaml:6:17: services.web.develop.watch[0].path"}},
	{name: "x-develop watch, which compose-go reads as develop",
		compose: "services:\n  web:\n    image: x\n    x-develop:\n      watch:\n        - path: ../canary\n" +
			"          action: sync\n          target: /app\n",
		want: []string{"compose.yaml:6:17: services.web.x-develop.watch[0].path"}},
	{name: "interpolated",
		compose: "services:\n  web:\n    image: x\n    label_file: ${DIR}/secret\n",
		env:     map[string]string{"DIR": "CANARYDIR"},
		want:    []string{"compose.yaml:4:17: services.web.label_file"}},
	{name: "anchor and merge key",
		compose: "x-common: &c\n  label_file: CANARY\nservices:\n  web:\n    <<: *c\n    image: x\n",
		want:    []string{"compose.yaml:2:15: services.web.label_file"}},
	{name: "pre_start hook",
		compose: "services:\n  web:\n    image: x\n    pre_start:\n      - image: y\n        env_file: CANARY\n",
		want:    []string{"compose.yaml:6:19: services.web.pre_start[0].env_file"}},
	{name: "nested include",
		compose: "include:\n  - sub/a.yaml\n",
		setup: func(w *escapeWorld) {
			w.write("ws/sub/a.yaml", "include:\n  - b.yaml\n")
			w.write("ws/sub/b.yaml", "services:\n  b:\n    image: x\n    label_file: ../../canary/secret\n")
		},
		want: []string{"sub/b.yaml:4:17: services.b.label_file"}},
	{name: "an extended file inside naming the canary",
		compose: "services:\n  web:\n    extends:\n      file: sub/base.yaml\n      service: b\n",
		setup: func(w *escapeWorld) {
			w.write("ws/sub/base.yaml", "services:\n  b:\n    image: x\n    label_file: ../../canary/secret\n")
		},
		want: []string{"sub/base.yaml:4:17: services.b.label_file"}},
	{name: "the project's .env a link out",
		compose: "services:\n  web:\n    image: \"x:${CANARY_TOKEN:-none}\"\n",
		setup:   func(w *escapeWorld) { w.link("ws/.env", "../canary/secret") },
		want:    []string{".env: .env"}},
	{name: "[compose] env_files and files",
		compose: "services:\n  web:\n    image: x\n",
		spec: spec.Compose{Files: []string{"compose.yaml", "../canary/inc.yaml"},
			EnvFiles: []string{"../canary/secret"}},
		want: []string{".sandboxforge.toml: compose.env_files[0]", ".sandboxforge.toml: compose.files[1]"}},
}

// problemsOf are the positioned problems of a load's error.
func problemsOf(err error) spec.Errors {
	var pe *guest.ProjectError
	if !errors.As(err, &pe) {
		return nil
	}
	return pe.Problems
}

// expand puts the canary's absolute paths into a case's text.
func (w *escapeWorld) expand(s string) string {
	return strings.NewReplacer("CANARYDIR", w.canary, "CANARY", w.secret).Replace(s)
}

// Every path a compose file names outside the workspace (after links) is
// a positioned problem, all at once, before compose-go reads anything;
// the problem never holds the file's content, and it reads the same
// whether the file outside exists or not.
func TestPathsOutsideTheWorkspaceArePositionedProblems(t *testing.T) {
	for _, tc := range escapes {
		t.Run(tc.name, func(t *testing.T) {
			w := newEscapeWorld(t)
			w.write("ws/compose.yaml", w.expand(tc.compose))
			if tc.setup != nil {
				tc.setup(w)
			}
			env := map[string]string{}
			for k, v := range tc.env {
				env[k] = w.expand(v)
			}
			_, err := w.load(tc.spec, env)
			problems := problemsOf(err)
			if len(problems) != len(tc.want) {
				t.Fatalf("want %d problems, got %v", len(tc.want), err)
			}
			for i, want := range tc.want {
				got := strings.TrimPrefix(problems[i].Error(), w.ws+string(filepath.Separator))
				if !strings.HasPrefix(got, want+": "+outsideMessage) {
					t.Errorf("problem %d:\n got %s\nwant %s: %s", i, got, want, outsideMessage)
				}
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), w.canary) {
				t.Errorf("the problem tells about the canary: %v", err)
			}
			if err := os.RemoveAll(w.canary); err != nil {
				t.Fatal(err)
			}
			if _, again := w.load(tc.spec, env); again == nil || again.Error() != err.Error() {
				t.Errorf("with the canary gone the answer changed:\n%v\n%v", err, again)
			}
		})
	}
}

// A check that would have to read more files than it allows is a problem,
// never files left for the loader to read unchecked.
func TestTooManyFilesToCheckIsAProblem(t *testing.T) {
	w := newEscapeWorld(t)
	var b strings.Builder
	b.WriteString("include:\n")
	for i := range maxWalks + 4 {
		fmt.Fprintf(&b, "  - f%d.yaml\n", i)
	}
	w.write("ws/compose.yaml", b.String())
	_, err := w.load(spec.Compose{}, nil)
	if len(problemsOf(err)) == 0 || !strings.Contains(err.Error(), "sbf checks no more") {
		t.Errorf("got %v", err)
	}
}

// What stays inside loads as before: links inside, includes with their
// env files, extends of files in a subfolder, absolute paths into the
// workspace, and a compose file of a guest that writes nothing out.
func TestPathsInsideTheWorkspaceLoad(t *testing.T) {
	w := newEscapeWorld(t)
	w.write("ws/compose.yaml", "include:\n  - path: sub/inc.yaml\n    env_file: inc.env\n"+
		"services:\n  web:\n    extends: {file: sub/base.yaml, service: b}\n"+
		"    env_file: [./inside.env, {path: missing.env, required: false}]\n"+
		"    label_file: ./labels\n    volumes: [./data:/data, named:/n]\n    build: {context: ., dockerfile: Dockerfile}\n"+
		"    configs: [c]\nconfigs:\n  c:\n    file: "+filepath.Join(w.ws, "cfg")+"\nvolumes:\n  named: {}\n")
	w.write("ws/inc.env", "TAG=from-inc-env\n")
	w.write("ws/sub/inc.yaml", "services:\n  inc:\n    image: \"x:${TAG}\"\n    env_file: own.env\n")
	w.write("ws/sub/own.env", "B=2\n")
	w.write("ws/sub/base.yaml", "services:\n  b:\n    image: base\n    env_file: own.env\n")
	w.write("ws/real-labels", "team=web\n")
	w.link("ws/labels", "real-labels")
	w.write("ws/cfg", "c\n")
	w.write("ws/data/x", "d\n")
	p, err := w.load(spec.Compose{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"x:from-inc-env", "team: web", "B: \"2\"", "A: \"1\""} {
		if !strings.Contains(string(p.Resolved), want) {
			t.Errorf("resolved compose file lacks %q:\n%s", want, p.Resolved)
		}
	}
}

// A loader failure about a file outside the workspace (one the check
// would have to miss) reads the same whatever happened to the file.
func TestLoaderErrorsAboutFilesOutsideSayNothingOfThem(t *testing.T) {
	l := &loading{files: []string{"/ws/compose.yaml"}, check: &checker{rootDir: "/ws"}}
	for _, msg := range []string{"label file /etc/shadow not found: no such file or directory",
		"open /etc/shadow: permission denied", "couldn't find env file: /home/op/.env",
		"failed to read /ws/../etc/x: line 1: unexpected character"} {
		got := l.loaderError(errors.New(msg)).Error()
		if got != "/ws/compose.yaml: "+loaderOutsideMessage {
			t.Errorf("%s: %s", msg, got)
		}
	}
	for _, msg := range []string{"label file /ws/labels not found", "services.web.volumes: duplicate mount target /data"} {
		if got := l.loaderError(errors.New(msg)).Error(); !strings.Contains(got, msg) {
			t.Errorf("%s became %s", msg, got)
		}
	}
}
