package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/spec"
)

// ImageChecks are what validate_image compares (v1's policies; the tool's
// checks argument overrides each).
type ImageChecks struct {
	GitCommit    bool
	GitDirty     string // warn_and_rebuild, rebuild, warn, fail or disabled
	Dependencies bool
	MaxAgeHours  *float64 // nil: any age
}

// DefaultImageChecks are the checks [build] asks for: commit, dependencies
// and age from [build.prebuilt.staleness_check]; uncommitted changes warn
// and ask for a rebuild when [build.staleness_detection] check_git_dirty.
func DefaultImageChecks(b spec.Build) ImageChecks {
	c := ImageChecks{GitCommit: b.Prebuilt.StalenessCheck.CheckGitCommit, GitDirty: "disabled",
		Dependencies: b.Prebuilt.StalenessCheck.CheckDependencies}
	if b.StalenessDetection.CheckGitDirty {
		c.GitDirty = "warn_and_rebuild"
	}
	if age := b.Prebuilt.StalenessCheck.CheckAgeThreshold; age != 0 {
		h := age.Std().Hours()
		c.MaxAgeHours = &h
	}
	return c
}

// ImageValidation is validate_image's verdict on an image against the
// workspace, in v1's fields. Recommendation is reuse, warn, rebuild,
// build or fail (or [build] on_stale / on_missing).
type ImageValidation struct {
	Valid          bool           `json:"valid"`
	Reasons        []string       `json:"reasons"`
	Warnings       []string       `json:"warnings"`
	Recommendation string         `json:"recommendation"`
	WorkspaceState WorkspaceState `json:"workspace_state"`
	ImageMetadata  map[string]any `json:"image_metadata"`
}

// imageMeta is what the guest's docker says of an image.
type imageMeta struct {
	Labels   map[string]string
	Created  string
	AgeHours *float64
}

// ValidateImage inspects an image in the guest and judges it against the
// workspace state. A missing image is a verdict, not an error.
func (d *Docker) ValidateImage(
	ctx context.Context,
	image string,
	st WorkspaceState,
	b spec.Build,
	checks ImageChecks,
) (ImageValidation, error) {
	meta, err := d.inspectImage(ctx, image)
	if err != nil {
		return ImageValidation{}, err
	}
	return judgeImage(image, meta, st, b, checks), nil
}

// inspectImage reads an image's labels and creation time in one call;
// nil when the guest has no such image.
func (d *Docker) inspectImage(ctx context.Context, image string) (*imageMeta, error) {
	res, err := d.Command(
		ctx,
		[]string{"image", "inspect", "--format", "{{.Created}} {{json .Config.Labels}}", "--", image},
	)
	if err != nil {
		if strings.Contains(strings.ToLower(res.Stderr), "no such image") {
			return nil, nil
		}
		return nil, err
	}
	created, labels, _ := strings.Cut(strings.TrimSpace(res.Stdout), " ")
	meta := &imageMeta{Labels: map[string]string{}, Created: created}
	var raw map[string]any
	if json.Unmarshal([]byte(labels), &raw) == nil {
		for k, v := range raw {
			meta.Labels[k] = fmt.Sprint(v)
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, created); err == nil {
		age := math.Round(max(d.now().Sub(t).Hours(), 0)*1000) / 1000
		meta.AgeHours = &age
	}
	return meta, nil
}

// judgeImage is v1's staleness verdict: the image's git.commit (or OCI
// revision) label against HEAD, its dependency hash against the
// workspace's, its age against the threshold, then the workspace's
// uncommitted changes under the git_dirty policy.
func judgeImage(image string, meta *imageMeta, st WorkspaceState, b spec.Build, c ImageChecks) ImageValidation {
	v := ImageValidation{Reasons: []string{}, Warnings: []string{}, Recommendation: "reuse", WorkspaceState: st,
		ImageMetadata: map[string]any{"image_name": image}}
	if meta == nil {
		v.Reasons = append(v.Reasons, "image_missing: "+image)
		v.Recommendation = b.StalenessDetection.OnMissing
		return v
	}
	gitLabel := firstOf(meta.Labels["git.commit"], meta.Labels["org.opencontainers.image.revision"])
	depsLabel := meta.Labels["build.dependencies.hash"]
	v.Reasons = append(v.Reasons, labelReasons(gitLabel, depsLabel, st, c)...)
	if c.MaxAgeHours != nil && *c.MaxAgeHours >= 0 && meta.AgeHours != nil && *meta.AgeHours > *c.MaxAgeHours {
		v.Reasons = append(
			v.Reasons,
			fmt.Sprintf("image_too_old: age_hours=%s, threshold_hours=%s", pyFloat(*meta.AgeHours), pyFloat(*c.MaxAgeHours)),
		)
	}
	dirtyPolicy(&v, st.GitDirty, strings.ToLower(c.GitDirty))
	v.Valid = len(v.Reasons) == 0
	switch {
	case !v.Valid && v.Recommendation == "reuse":
		v.Recommendation = b.Prebuilt.StalenessCheck.OnStale
	case v.Valid && len(v.Warnings) > 0 && v.Recommendation == "reuse":
		v.Recommendation = "warn"
	}
	v.ImageMetadata = map[string]any{"image_name": image, "git_commit": nilIfBlank(gitLabel),
		"git_branch": labelOrNil(meta.Labels, "git.branch"), "dependencies_hash": nilIfBlank(depsLabel),
		"build_timestamp": nilIfBlank(
			firstOf(meta.Labels["build.timestamp"], meta.Labels["org.opencontainers.image.created"]),
		),
		"age_hours": meta.AgeHours, "labels": meta.Labels}
	return v
}

func labelReasons(gitLabel, depsLabel string, st WorkspaceState, c ImageChecks) []string {
	var out []string
	if want := or(st.GitCommit, ""); c.GitCommit && want != "" {
		switch {
		case gitLabel == "":
			out = append(out, "git_commit_missing_in_image_labels")
		case gitLabel != want:
			out = append(out, fmt.Sprintf("git_commit_mismatch: image=%s, workspace=%s", gitLabel, want))
		}
	}
	if want := or(st.DependenciesHash, ""); c.Dependencies && want != "" {
		switch {
		case depsLabel == "":
			out = append(out, "dependencies_hash_missing_in_image_labels")
		case depsLabel != want:
			out = append(out, fmt.Sprintf("dependencies_changed: image=%s, workspace=%s", cut(depsLabel, 12), cut(want, 12)))
		}
	}
	return out
}

// dirtyPolicy applies the git_dirty policy to a workspace with
// uncommitted changes.
func dirtyPolicy(v *ImageValidation, dirty bool, policy string) {
	if !dirty {
		return
	}
	const msg = "workspace_has_uncommitted_changes"
	switch policy {
	case "warn", "warning":
		v.Warnings = append(v.Warnings, msg)
	case "fail":
		v.Reasons, v.Recommendation = append(v.Reasons, msg), "fail"
	case "rebuild", "warn_and_rebuild":
		if policy == "warn_and_rebuild" {
			v.Warnings = append(v.Warnings, msg)
		}
		v.Reasons, v.Recommendation = append(v.Reasons, msg), "rebuild"
	}
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func nilIfBlank(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func labelOrNil(labels map[string]string, k string) any {
	if v, ok := labels[k]; ok {
		return v
	}
	return nil
}

// pyFloat prints a float as Python's repr does (24.0, 26.5), so reasons
// read as v1's did.
func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
