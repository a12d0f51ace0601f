package docker

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
)

// BuildRequest is one docker_build.
type BuildRequest struct {
	InstanceID  string // what the caller calls the sandbox, for guidance
	ContextPath string
	ImageTag    string
	Dockerfile  string
	Target      string
	BuildArgs   map[string]string // override the automatic ones
	NoCache     bool
}

// BuildResult is what docker_build did: reused a cached image (CacheHit,
// Command "cached-image-reuse") or built one.
type BuildResult struct {
	DockerResult
	ImageTag       string
	CachedImageTag string
	CacheStrategy  string
	CacheHit       bool
	Validation     any // *ImageValidation, v1's {"valid", "mode"} when validation is disabled, or nil
	WorkspaceState WorkspaceState
}

// Build runs v1's docker_build: the disk preflight, then the [build]
// cache (the image tagged for the workspace's state is reused when it
// passes validation; strict validation recommending fail stops with
// PREBUILT_IMAGE_INVALID), else a build labelled with the workspace's
// state and tagged for the cache.
func (d *Docker) Build(ctx context.Context, req BuildRequest) (BuildResult, error) {
	r := d.target.Resolved
	b := r.Config.Build
	if err := d.ensureDisk(ctx, b.MinFreeGiB, d.diskAdvice(req.InstanceID)); err != nil {
		return BuildResult{}, err
	}
	st := ReadWorkspaceState(ctx, r.Root, b, d.now())
	out := BuildResult{ImageTag: req.ImageTag, CacheStrategy: b.ImageCaching.Strategy, WorkspaceState: st,
		CachedImageTag: ExpectedImageTag(req.ImageTag, b.ImageCaching.TagFormat, st)}
	if b.ImageCaching.Enabled && b.Prebuilt.Enabled && !req.NoCache {
		hit, err := d.reuse(ctx, req, b, &out)
		if hit || err != nil {
			return out, err
		}
	}
	env := map[string]string{}
	if b.EnableBuildkit {
		env["DOCKER_BUILDKIT"] = "1"
	}
	bs := BuildSpec{Context: req.ContextPath, Tag: req.ImageTag, Dockerfile: req.Dockerfile, Target: req.Target,
		NoCache: req.NoCache, BuildArgs: buildArgs(st, req.BuildArgs), Labels: buildLabels(st)}
	res, err := d.run(ctx, d.line(BuildArgs(bs)), call{Timeout: dockerBuild, Env: env})
	if err != nil {
		return out, err
	}
	out.DockerResult = res
	if b.ImageCaching.Enabled && out.CachedImageTag != req.ImageTag {
		if _, err := d.Command(ctx, []string{"tag", "--", req.ImageTag, out.CachedImageTag}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// reuse tags the cached image as the requested one when it may be used.
func (d *Docker) reuse(ctx context.Context, req BuildRequest, b spec.Build, out *BuildResult) (bool, error) {
	cached := out.CachedImageTag
	if b.Prebuilt.Validation == "disabled" {
		meta, err := d.inspectImage(ctx, cached)
		if err != nil || meta == nil {
			return false, err
		}
		out.Validation = map[string]any{"valid": true, "mode": "disabled"}
		return true, d.retag(ctx, cached, req.ImageTag, out)
	}
	v, err := d.ValidateImage(ctx, cached, out.WorkspaceState, b, DefaultImageChecks(b))
	if err != nil {
		return false, err
	}
	out.Validation = &v
	if v.Valid {
		return true, d.retag(ctx, cached, req.ImageTag, out)
	}
	if b.Prebuilt.Validation == "strict" && v.Recommendation == "fail" {
		return false, coded.New(
			CodePrebuiltInvalid,
			map[string]any{"instance_id": req.InstanceID, "image_tag": cached, "validation": v},
			"Prebuilt image %s failed strict validation: %s",
			cached,
			strings.Join(v.Reasons, "; "),
		)
	}
	return false, nil
}

func (d *Docker) retag(ctx context.Context, from, to string, out *BuildResult) error {
	out.CacheHit, out.DockerResult = true, DockerResult{Command: "cached-image-reuse"}
	if from == to {
		return nil
	}
	_, err := d.Command(ctx, []string{"tag", "--", from, to})
	return err
}

// buildArgs are v1's automatic build args (unknown values read
// "unknown"), overridden in place by the caller's; the caller's others
// follow in name order.
func buildArgs(st WorkspaceState, given map[string]string) []KV {
	auto := []KV{{"GIT_COMMIT", or(st.GitCommit, "unknown")}, {"GIT_BRANCH", nonEmpty(st.GitBranch, "unknown")},
		{"BUILD_TIMESTAMP", st.BuildTimestamp}, {"DEPENDENCIES_HASH", or(st.DependenciesHash, "unknown")},
		{"WORKSPACE_CONTENT_HASH", nonEmpty(st.ContentHash, "unknown")}}
	for i := range auto {
		if v, ok := given[auto[i].Key]; ok {
			auto[i].Value = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		if !slices.ContainsFunc(auto[:5], func(kv KV) bool { return kv.Key == k }) {
			auto = append(auto, KV{k, given[k]})
		}
	}
	return auto
}

// buildLabels are what validate_image later reads back.
func buildLabels(st WorkspaceState) []KV {
	commit := or(st.GitCommit, "")
	return []KV{{"git.commit", commit}, {"git.branch", st.GitBranch}, {"build.timestamp", st.BuildTimestamp},
		{"build.dependencies.hash", or(st.DependenciesHash, "")}, {"build.content.hash", st.ContentHash},
		{"org.opencontainers.image.revision", commit}, {"org.opencontainers.image.created", st.BuildTimestamp}}
}

// diskProbe prints the free KiB of the guest's root filesystem.
const diskProbe = `df -Pk / | awk 'NR==2 {print $4}'`

// ensureDisk checks the guest has need GiB free on /, running a safe
// cleanup once when it has not; INSUFFICIENT_DISK when even that is not
// enough, with advice on a bigger disk.
func (d *Docker) ensureDisk(ctx context.Context, need float64, advice func(details map[string]any)) error {
	before, err := d.freeGiB(ctx, "before docker build")
	if err != nil || before >= need {
		return err
	}
	cleanup, err := d.Cleanup(ctx, "safe")
	if err != nil {
		return err
	}
	after, err := d.freeGiB(ctx, "after cleanup")
	if err != nil || after >= need {
		return err
	}
	details := map[string]any{"free_disk_gib_before_cleanup": round3(before), "free_disk_gib_after_cleanup": round3(after),
		"required_free_disk_gib": need, "cleanup_command": cleanup.Command}
	advice(details)
	return coded.New(CodeInsufficientDisk, details,
		"Insufficient free disk for docker build after safe cleanup: %s GiB free, %s GiB needed ([build] min_free_gib)",
		pyFloat(round3(after)), pyFloat(need))
}

func (d *Docker) freeGiB(ctx context.Context, when string) (float64, error) {
	res, err := d.exec(ctx, probeReq(diskProbe))
	if err != nil {
		return 0, fmt.Errorf("probing the guest's free disk: %w", err)
	}
	lines := strings.Fields(res.Stdout)
	if res.ExitCode == 0 && len(lines) > 0 {
		if kib, err := strconv.ParseInt(lines[len(lines)-1], 10, 64); err == nil {
			return float64(kib) / (1 << 20), nil
		}
	}
	return 0, coded.New(coded.BackendCommand, map[string]any{"command": "disk probe", "exit_code": res.ExitCode,
		"stdout": res.Stdout, "stderr": res.Stderr, "duration_ms": res.DurationMS},
		"Unable to determine free disk space %s", when)
}

func probeReq(command string) drivers.ExecRequest {
	return drivers.ExecRequest{Command: command, Timeout: dockerShort}
}

// diskAdvice says how to get a bigger disk: v1's guided recreate for a
// sandbox an agent made; a declared sandbox's disk grows on apply.
func (d *Docker) diskAdvice(id string) func(map[string]any) {
	r, name := d.target.Resolved, d.target.Sandbox
	size := max(int(r.Config.Sandboxes[name].DiskGiB*2), 30)
	file := filepath.Join(r.Root, spec.FileName)
	return func(details map[string]any) {
		details["instance_id"], details["workspace_root"] = id, r.Root
		if r.AdHoc[name] {
			details["guided_recreate_action"] = []string{fmt.Sprintf("Set vm.disk_gib >= %d in %s", size, file),
				fmt.Sprintf("destroy_instance(instance_id='%s')", id),
				fmt.Sprintf("create_instance(workspace_root='%s', auto_bootstrap=True)", r.Root)}
			return
		}
		details["guided_recreate_action"] = []string{
			fmt.Sprintf("Set disk_gib >= %d for [sandboxes.%s] in %s", size, name, file),
			"sbf apply --target " + name + " (the disk grows in place; the VM restarts)",
		}
	}
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
