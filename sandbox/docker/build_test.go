package docker

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
)

const (
	oneGiB  = "1048576\n"
	tenGiB  = "10485760\n"
	created = "2026-11-25T11:00:00.123456789Z" // an hour before the harness's now
)

// buildHarness is a sandbox whose workspace is a git repository with one
// commit, so builds are keyed on a real commit.
func buildHarness(t *testing.T, extra string) (*sandboxtest.Sandbox, WorkspaceState) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	h := sandboxtest.New(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n"+extra, "api")
	testutil.WriteFile(t, filepath.Join(h.Root, ".gitignore"), "world/\nhost/\n")
	testutil.WriteFile(t, filepath.Join(h.Root, "uv.lock"), "deps v1\n")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "one"}} {
		if out, err := exec.Command("git", append([]string{"-C", h.Root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return h, ReadWorkspaceState(context.Background(), h.Root, h.Resolved.Config.Build, h.Clock.Now())
}

// labelsOf is what a build made from st labels its image with.
func labelsOf(st WorkspaceState) string {
	return `{"git.commit":"` + *st.GitCommit + `","build.dependencies.hash":"` + *st.DependenciesHash + `"}`
}

func TestBuildReusesAValidCachedImage(t *testing.T) {
	h, st := buildHarness(t, "")
	cached := "repo/app:" + *st.GitShort + "-" + (*st.DependenciesHash)[:12]
	d, g := scriptedDocker(t, h, reply{match: "df -Pk", res: out(tenGiB)},
		reply{match: "-- " + cached, res: out(created + " " + labelsOf(st))})
	res, err := d.Build(context.Background(), BuildRequest{InstanceID: "inst_1", ContextPath: "/w",
		ImageTag: "repo/app:dev"})
	if err != nil || !res.CacheHit || res.CachedImageTag != cached || res.Command != "cached-image-reuse" {
		t.Fatalf("build: %+v %v", res, err)
	}
	if !g.ran("docker tag -- "+cached+" repo/app:dev") || g.ran("docker build") {
		t.Errorf("commands: %q", g.cmds)
	}
	if v := res.Validation.(*ImageValidation); !v.Valid || v.Recommendation != "reuse" ||
		v.ImageMetadata["age_hours"].(*float64) == nil {
		t.Errorf("validation: %+v", v)
	}
}

func TestBuildRebuildsAStaleImageWithLabels(t *testing.T) {
	h, st := buildHarness(t, "")
	d, g := scriptedDocker(t, h, reply{match: "df -Pk", res: out(tenGiB)},
		reply{match: "image inspect", res: out(created + ` {"git.commit":"0000"}`)}, reply{match: "docker build",
			res: out("built\n")})
	res, err := d.Build(context.Background(), BuildRequest{ContextPath: "/w", ImageTag: "repo/app:dev",
		Dockerfile: "Dockerfile",
		BuildArgs:  map[string]string{"GIT_BRANCH": "override", "EXTRA": "x y"}})
	if err != nil || res.CacheHit || res.Stdout != "built\n" ||
		res.Validation.(*ImageValidation).Recommendation != "rebuild" {
		t.Fatalf("build: %+v %v", res, err)
	}
	c := *st.GitCommit
	want := "export DOCKER_BUILDKIT='1' && docker build -t repo/app:dev -f Dockerfile --build-arg GIT_COMMIT=" + c +
		" --build-arg GIT_BRANCH=override --build-arg BUILD_TIMESTAMP=2026-11-25T12:00:00Z --build-arg DEPENDENCIES_HASH=" +
		*st.DependenciesHash + " --build-arg WORKSPACE_CONTENT_HASH=" + st.ContentHash + " --build-arg 'EXTRA=x y'" +
		" --label git.commit=" + c + " --label git.branch=main --label build.timestamp=2026-11-25T12:00:00Z" +
		" --label build.dependencies.hash=" + *st.DependenciesHash + " --label build.content.hash=" + st.ContentHash +
		" --label org.opencontainers.image.revision=" + c +
		" --label org.opencontainers.image.created=2026-11-25T12:00:00Z -- /w"
	if !g.ran(want) || !g.ran("docker tag -- repo/app:dev "+res.CachedImageTag) {
		t.Errorf("commands:\n%s\nwant\n%s", strings.Join(g.cmds, "\n"), want)
	}
}

func TestBuildStrictValidationFails(t *testing.T) {
	h, _ := buildHarness(t, "[build.prebuilt.staleness_check]\non_stale = \"fail\"\n")
	d, g := scriptedDocker(t, h, reply{match: "df -Pk", res: out(tenGiB)},
		reply{match: "image inspect", res: out(created + ` {"git.commit":"0000"}`)})
	_, err := d.Build(context.Background(), BuildRequest{InstanceID: "inst_1", ContextPath: "/w",
		ImageTag: "repo/app:dev"})
	ce := codeOf(t, err)
	if v, _ := ce.Details["validation"].(ImageValidation); ce.Code != CodePrebuiltInvalid ||
		v.Recommendation != "fail" || g.ran("docker build") {
		t.Errorf("strict: %+v", ce)
	}
}

func TestBuildWithoutCache(t *testing.T) {
	h, _ := buildHarness(t, "[build.prebuilt]\nvalidation = \"disabled\"\n")
	d, g := scriptedDocker(t, h, reply{match: "df -Pk", res: out(tenGiB)}, reply{match: "image inspect",
		res: out(created + " null")})
	res, err := d.Build(context.Background(), BuildRequest{ContextPath: "/w", ImageTag: "repo/app:dev"})
	if err != nil || !res.CacheHit || res.Validation.(map[string]any)["mode"] != "disabled" {
		t.Fatalf("validation disabled, image present: %+v %v", res, err)
	}
	g.cmds = nil
	res, err = d.Build(context.Background(), BuildRequest{ContextPath: "/w", ImageTag: "repo/app:dev", NoCache: true})
	if err != nil || res.CacheHit || g.ran("image inspect") || !g.ran(" --no-cache -- /w") {
		t.Errorf("no_cache: %+v %v %q", res, err, g.cmds)
	}
	d, _ = scriptedDocker(t, h, reply{match: "df -Pk", res: out(tenGiB)}, reply{match: "docker build",
		res: failed(1, "no Dockerfile\n")})
	_, err = d.Build(context.Background(), BuildRequest{ContextPath: "/w", ImageTag: "repo/app:dev", NoCache: true})
	if ce := codeOf(t, err); ce.Code != CodeDockerFailed || ce.Details["stderr"] != "no Dockerfile\n" ||
		!strings.HasPrefix(ce.Details["command"].(string), "docker build -t repo/app:dev") {
		t.Errorf("failed build: %+v", ce)
	}
}

func TestBuildDiskPreflight(t *testing.T) {
	h, _ := buildHarness(t, "")
	d, g := scriptedDocker(t, h, reply{match: "df -Pk", res: out(oneGiB)})
	_, err := d.Build(context.Background(), BuildRequest{InstanceID: "sbf-x-api", ContextPath: "/w", ImageTag: "a:b"})
	ce := codeOf(t, err)
	steps, _ := ce.Details["guided_recreate_action"].([]string)
	if ce.Code != CodeInsufficientDisk || ce.Details["free_disk_gib_after_cleanup"] != 1.0 ||
		ce.Details["required_free_disk_gib"] != 3.0 ||
		ce.Details["instance_id"] != "sbf-x-api" || len(steps) != 2 || !strings.Contains(steps[0], "disk_gib >= 30") {
		t.Errorf("insufficient: %+v", ce)
	}
	if !g.ran("docker container prune -f && docker image prune -f") || g.ran("docker build") {
		t.Errorf("commands: %q", g.cmds)
	}
	d, g = scriptedDocker(t, h, reply{match: "df -Pk", res: out(oneGiB), once: true}, reply{match: "df -Pk",
		res: out(tenGiB)})
	if _, err := d.Build(context.Background(), BuildRequest{ContextPath: "/w", ImageTag: "a:b"}); err != nil ||
		!g.ran("docker build") {
		t.Errorf("cleanup freed enough: %v %q", err, g.cmds)
	}
	d, _ = scriptedDocker(t, h, reply{match: "df -Pk", res: drivers.ExecResult{ExitCode: 1,
		Stderr: "df: /: no such file"}})
	if _, err := d.Build(context.Background(), BuildRequest{ContextPath: "/w", ImageTag: "a:b"}); codeOf(t,
		err).Code != "BACKEND_COMMAND_FAILED" {
		t.Errorf("probe failure: %v", err)
	}
}
