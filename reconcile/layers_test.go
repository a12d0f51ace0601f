package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/drivers/guest/composefile"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/spec"
)

const layeredSpec = `
[vm]
driver = "sim"
[sandboxes.api]
compose = true
services = ["redis"]
`

const appCompose = `services:
  web:
    image: nginx:1
    environment:
      REDIS: ${REDIS_URL}
  worker:
    image: busybox
`

func layeredHarness(t *testing.T) *harness {
	h := newHarness(t, layeredSpec)
	h.guests = &guestWorld{}
	testutil.WriteFile(t, filepath.Join(h.root, "compose.yaml"), appCompose)
	testutil.WriteFile(t, filepath.Join(h.root, ".env"), "# my settings\nAPP_MODE=dev\n")
	return h
}

func kinds(p *plan.Plan) string {
	var out []string
	for _, a := range p.Actions {
		out = append(out, string(a.Kind)+"("+a.Cause+")")
	}
	return strings.Join(out, " ")
}

func TestLayersConvergeAndStayConverged(t *testing.T) {
	h := layeredHarness(t)
	res := h.mustApply()
	if got := kinds(res.Plan); got != "create(not found) runtime(new VM) services(new VM) env(connection variables "+
		"differ in .env) compose(new VM)" {
		t.Fatalf("first plan: %s", got)
	}
	g := h.guests.get(h.instance("api"))
	if strings.Join(g.ups, ",") != "sbf-api-services,sbf-api" {
		t.Errorf("ups = %v", g.ups)
	}
	env, _ := os.ReadFile(filepath.Join(h.root, ".env"))
	if !strings.HasPrefix(string(env), "# my settings\nAPP_MODE=dev\n") ||
		!strings.Contains(string(env), "REDIS_URL=redis://lima-redis-api:6379/0\n") {
		t.Errorf(".env = %q", env)
	}
	rec := res.recorded.Sandboxes["api"]
	if rec.Applied["docker_command"] != "docker" || rec.Applied["compose.web"] == "" ||
		rec.Applied["services.redis"] == "" {
		t.Errorf("applied = %v", rec.Applied)
	}
	for k, v := range rec.Applied {
		if strings.Contains(v, "redis://") {
			t.Errorf("state holds a connection value under %s", k)
		}
	}
	composes := func() int {
		h.guests.mu.Lock()
		defer h.guests.mu.Unlock()
		return g.composes
	}
	before := composes()
	if p := h.plan(); !p.Empty() {
		t.Fatalf("plan after apply: %s", kinds(p))
	}
	if n := len(g.ups); h.mustApply() != nil && len(g.ups) != n {
		t.Error("a converged apply ran compose up again")
	}
	// guest.ObserveRecorded: an emulated guest spends seconds of CPU on each compose start.
	if n := composes() - before; n != 0 {
		t.Errorf("looking at a converged guest twice started compose or the runtime probe %d times", n)
	}
}

func TestComposeEditRecreatesOnlyThatService(t *testing.T) {
	h := layeredHarness(t)
	h.mustApply()
	g := h.guests.get(h.instance("api"))
	g.recreated = nil
	testutil.WriteFile(t, filepath.Join(h.root, "compose.yaml"), strings.Replace(appCompose, "nginx:1", "nginx:2", 1))
	p := h.plan()
	if got := kinds(p); got != "compose(changed: web)" {
		t.Fatalf("plan after editing web: %s", got)
	}
	h.mustApply()
	if !slices.Equal(g.recreated, []string{"sbf-api/web"}) {
		t.Errorf("recreated %v, want only web", g.recreated)
	}
	if p := h.plan(); !p.Empty() {
		t.Errorf("plan after the edit was applied: %s", kinds(p))
	}
}

func TestGuestDriftIsRepaired(t *testing.T) {
	h := layeredHarness(t)
	h.mustApply()
	g := h.guests.get(h.instance("api"))
	hash := g.running["sbf-api"]["worker"].hash
	g.running["sbf-api"]["worker"] = fakeContainer{hash: hash, state: "exited"}
	before := g.composes
	if got := kinds(h.plan()); got != "compose(worker is exited)" {
		t.Fatalf("plan: %s", got)
	}
	if g.composes == before {
		t.Error("a guest that differs from the record was not looked at the long way")
	}
	g.running["sbf-api"]["worker"] = fakeContainer{hash: "recreated-by-hand", state: "running"}
	if got := kinds(h.plan()); got != "compose(worker differs from its config)" {
		t.Fatalf("plan: %s", got)
	}
	g.running["sbf-api"]["worker"] = fakeContainer{hash: hash, state: "exited"}
	if got := kinds(h.plan()); got != "compose(worker is exited)" {
		t.Fatalf("plan: %s", got)
	}
	os.WriteFile(filepath.Join(h.root, ".env"), []byte("# my settings\nREDIS_HOST=elsewhere\n"), 0o644)
	if got := kinds(h.plan()); got != "env(connection variables differ in .env) compose(worker is exited)" {
		t.Fatalf("plan: %s", got)
	}
	h.mustApply()
	if p := h.plan(); !p.Empty() {
		t.Errorf("after repair: %s", kinds(p))
	}
	env, _ := os.ReadFile(filepath.Join(h.root, ".env"))
	if !strings.Contains(string(env), "REDIS_HOST=lima-redis-api\n") || strings.Contains(string(env), "elsewhere") {
		t.Errorf(".env = %q", env)
	}
}

func TestMissingRuntimeIsInstalled(t *testing.T) {
	h := layeredHarness(t)
	h.writeSpec(layeredSpec + "[docker]\ninstall_if_missing = false\n")
	g := h.guests.get(h.instance("api"))
	g.installed = false
	_, err := h.apply()
	if c := coded.Of(err, coded.Unknown).Code; c != "RUNTIME_NOT_READY" ||
		!strings.Contains(err.Error(), "sandbox api: runtime") {
		t.Fatalf("err = %v", err)
	}
	if len(g.ups) != 0 {
		t.Error("compose ran although the runtime step failed")
	}
	h.writeSpec(layeredSpec)
	if got := kinds(h.plan()); !strings.HasPrefix(got, "runtime(runtime not ready (missing)) services") {
		t.Fatalf("plan: %s", got)
	}
	h.mustApply()
	if !g.installed || len(g.ups) != 2 {
		t.Errorf("installed %v, ups %v", g.installed, g.ups)
	}
}

// The sim runs commands on the host: sbf never runs its guest scripts
// (a Docker install) through it, and says why.
func TestHostShellDriverCannotConvergeLayers(t *testing.T) {
	h := newHarness(t, layeredSpec)
	testutil.WriteFile(t, filepath.Join(h.root, "compose.yaml"), appCompose)
	_, err := h.apply()
	if err == nil || !strings.Contains(err.Error(), "runs commands on this host, not in a VM") {
		t.Errorf("err = %v", err)
	}
	if ops := h.ops(); strings.Contains(ops, "exec") {
		t.Errorf("guest commands ran on the host:\n%s", ops)
	}
}

// What prepare_workspace reports comes from what the engine recorded while
// converging, not from a template.
func TestPreparedReportsWhatTheEngineDid(t *testing.T) {
	h := newHarness(t,
		"[vm]\ndriver = \"sim\"\n[infra.mysql]\nroot_password = \"s3cret-pw\"\n[sandboxes.api]\nruntime = true\nservices "+
			"= [\"mysql\", \"redis\"]\n")
	h.guests = &guestWorld{}
	empty, _ := h.eng.Prepared(h.mustApplyWith(Options{Intent: Renew{All: true}, NoWait: true}), "api")
	if empty.Services["mysql"].Ready || empty.Services["mysql"].Attempts != 0 {
		t.Errorf("without waiting, services are not known to answer: %+v", empty.Services)
	}
	res := h.mustApply()
	p, err := h.eng.Prepared(res, "api")
	if err != nil {
		t.Fatal(err)
	}
	if !p.RuntimeReady || p.DockerCommand != "docker" || p.Network == nil || p.Network.Name != "lima-net-api" {
		t.Errorf("runtime/network: %+v", p)
	}
	if my := p.Services["mysql"]; my.Container != "lima-mysql-api" || my.Image != "mysql:8.0" || my.Port != 3306 {
		t.Errorf("mysql: %+v", my)
	}
	if len(p.EnvInjections) != 1 || !slices.Contains(p.EnvInjections[0].Keys, "DB_PASSWORD") ||
		!strings.HasSuffix(p.EnvInjections[0].Path, ".env") {
		t.Errorf("env injections: %+v", p.EnvInjections)
	}
	if p.ConnectionEnv["DB_HOST"] != "lima-mysql-api" || strings.Contains(fmt.Sprint(p.ConnectionEnv), "s3cret-pw") {
		t.Errorf("connection env (secrets must be redacted): %v", p.ConnectionEnv)
	}
	state, _ := os.ReadFile(filepath.Join(h.root, spec.Dir, "state.json"))
	if strings.Contains(string(state), "s3cret-pw") {
		t.Error("the state file holds the password")
	}
}

// A guest that already has Docker (an image with it built in) gets no
// runtime step, and the record still learns its docker command, so
// prepare_workspace reports the runtime ready.
func TestRuntimeFoundReadyIsRecorded(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.guests = &guestWorld{}
	h.mustApply()
	h.writeSpec("[vm]\ndriver = \"sim\"\n[sandboxes.api]\nruntime = true\n")
	res := h.mustApply()
	for _, a := range res.Plan.Actions {
		if a.Kind == plan.Runtime {
			t.Fatalf("a runtime step for a guest that has Docker: %+v", res.Plan.Actions)
		}
	}
	p, err := h.eng.Prepared(res, "api")
	if err != nil || !p.RuntimeReady || p.DockerCommand != "docker" {
		t.Errorf("prepared = %+v, %v", p, err)
	}
	if again := h.mustApply(); !again.Plan.Empty() {
		t.Errorf("the correction did not stick: %+v %+v", again.Plan.Actions, again.Plan.Refresh)
	}
}

// The env step never reads or writes through a link: a guest that planted
// .env -> a host file would otherwise get that file's content copied into
// the workspace, or the connection variables written over it. The compose
// load, which reads the project's .env, refuses the link first; with
// [compose] env_files naming another file, the env step meets it.
func TestEnvStepNeverFollowsALink(t *testing.T) {
	h := layeredHarness(t)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("TOKEN=hunter2\n"), 0o600)
	os.Remove(filepath.Join(h.root, ".env"))
	if err := os.Symlink(secret, filepath.Join(h.root, ".env")); err != nil {
		t.Fatal(err)
	}
	_, err := h.apply()
	var ce *coded.Error
	if ce = coded.Of(err, ""); ce == nil || ce.Code != coded.ConfigInvalid || !strings.Contains(err.Error(), ".env") ||
		strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("apply, the compose load meeting the link: %v", err)
	}
	h.writeSpec(layeredSpec + "[compose]\nenv_files = [\"compose.env\"]\n")
	testutil.WriteFile(t, filepath.Join(h.root, "compose.env"), "APP_MODE=dev\n")
	_, err = h.apply()
	if !errors.As(err, &ce) || ce.Code != "WORKSPACE_ENV_INJECTION_FAILED" {
		t.Fatalf("apply: %v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "TOKEN=hunter2\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if target, err := os.Readlink(filepath.Join(h.root, ".env")); err != nil || target != secret {
		t.Errorf(".env is no longer the link: %q %v", target, err)
	}
}

func TestABrokenComposeFileDoesNotHoldBackDestroy(t *testing.T) {
	h := layeredHarness(t)
	h.mustApply()
	testutil.WriteFile(t, filepath.Join(h.root, "compose.yaml"), "services: [not, a, map")
	if _, err := h.apply(); err == nil || !strings.Contains(err.Error(), "compose") {
		t.Fatalf("apply with a broken compose file: %v, want the compose error", err)
	}
	if _, err := h.converge(Options{Intent: Destroy{All: true}}); err != nil {
		t.Fatalf("destroy with a broken compose file: %v", err)
	}
	if w := h.world(); len(w) != 0 {
		t.Errorf("world after destroy = %+v", w)
	}
}

// The plan's look at a .env file reads it as the env step writes it:
// never through a link, at the file or in a folder above it, so a guest's
// link to a host file that happens to hold the values tells nothing.
func TestEnvCheckNeverReadsThroughALink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	vars := map[string]string{"REDIS_HOST": "r"}
	up := string(guest.UpsertEnv(nil, vars))
	testutil.WriteFile(t, filepath.Join(outside, "x.env"), up)
	testutil.WriteFile(t, filepath.Join(root, "real", "x.env"), up)
	os.Symlink(outside, filepath.Join(root, "envdir"))
	os.Symlink(filepath.Join(outside, "x.env"), filepath.Join(root, "link.env"))
	for file, want := range map[string]bool{"real/x.env": true, "envdir/x.env": false, "link.env": false} {
		abs := filepath.Join(root, file)
		l := &plan.Layers{EnvWriter: hostpath.Policy{Roots: []string{root}}, Env: map[string]map[string]string{abs: vars}}
		if got := envUpToDate(l, abs); got != want {
			t.Errorf("%s: up to date %v, want %v", file, got, want)
		}
	}
}

// Where the guest's dockerd answers on its socket, looking at a converged
// guest starts no docker CLI there (a large program, ~0.8 s of an emulated
// guest's CPU) and still sees drift.
func TestAConvergedGuestIsLookedAtThroughDockerdsSocket(t *testing.T) {
	h := layeredHarness(t)
	h.guests.sockets = true
	h.mustApply()
	g := h.guests.get(h.instance("api"))
	counts := func() (ps, lists, composes int) {
		h.guests.mu.Lock()
		defer h.guests.mu.Unlock()
		return g.psRuns, g.apiLists, g.composes
	}
	ps0, lists0, composes0 := counts()
	if p := h.plan(); !p.Empty() {
		t.Fatalf("plan after apply: %s", kinds(p))
	}
	if ps, lists, composes := counts(); ps != ps0 || lists != lists0+2 || composes != composes0 {
		t.Errorf("the converged look ran docker ps %d times, compose %d times and asked dockerd %d times "+
			"(want 0, 0, 2: a list for the services and one for compose)", ps-ps0, composes-composes0, lists-lists0)
	}
	h.guests.mu.Lock()
	hash := g.running["sbf-api"]["worker"].hash
	g.running["sbf-api"]["worker"] = fakeContainer{hash: hash, state: "exited"}
	h.guests.mu.Unlock()
	if got := kinds(h.plan()); got != "compose(worker is exited)" {
		t.Fatalf("plan after the worker stopped: %s", got)
	}
}

// A create beside a sandbox with a compose stack loads no compose file:
// the run acts on the new sandbox alone, and each load is a child process
// (~0.1 s on a loaded host). A broken file of the other sandbox holds the
// create back no more; the files of a sandbox the run acts on are loaded.
func TestARunLoadsOnlyTheComposeFilesOfWhatItActsOn(t *testing.T) {
	h := layeredHarness(t)
	h.mustApply()
	var loaded []string
	h.eng.Env.Compose = func(ctx context.Context, o guest.LoadOptions) (*guest.Project, error) {
		loaded = append(loaded, o.Sandbox)
		return composefile.LoadProject(ctx, o)
	}
	testutil.WriteFile(t, filepath.Join(h.root, "compose.yaml"), "services: [not, a, map")
	if _, err := h.converge(Options{Targets: []string{"web"}, Intent: Up{Sandboxes: []string{"web"}}}); err != nil {
		t.Fatalf("a create beside a broken compose file of another sandbox: %v", err)
	}
	if len(loaded) != 0 {
		t.Errorf("the create of web loaded the compose files of %v", loaded)
	}
	_, err := h.converge(Options{Targets: []string{"api"}, Intent: Up{Sandboxes: []string{"api"}}})
	if err == nil || !strings.Contains(err.Error(), "compose") || !slices.Equal(loaded, []string{"api"}) {
		t.Errorf("a run on api with its compose file broken: %v; loaded %v", err, loaded)
	}
}
