package spec

// Build is the v1 [build] table: image caching and staleness detection
// for docker_build.
type Build struct {
	EnableBuildkit     bool               `toml:"enable_buildkit" json:"enable_buildkit" doc:"Set DOCKER_BUILDKIT=1."`
	MinFreeGiB         float64            `toml:"min_free_gib" json:"min_free_gib" check:"positive" doc:"Guest free disk required before a build."`
	Prebuilt           Prebuilt           `toml:"prebuilt" json:"prebuilt" doc:"Reuse of previously built images."`
	ImageCaching       ImageCaching       `toml:"image_caching" json:"image_caching" doc:"How cached images are tagged."`
	StalenessDetection StalenessDetection `toml:"staleness_detection" json:"staleness_detection" doc:"What makes a workspace differ from its image."`
}

// Prebuilt is [build.prebuilt].
type Prebuilt struct {
	Enabled        bool           `toml:"enabled" json:"enabled" doc:"Reuse prebuilt images."`
	Validation     string         `toml:"validation" json:"validation" enum:"strict,warn,disabled" doc:"How a stale prebuilt image is treated."`
	StalenessCheck StalenessCheck `toml:"staleness_check" json:"staleness_check" doc:"Checks a prebuilt image must pass."`
}

// StalenessCheck is [build.prebuilt.staleness_check].
type StalenessCheck struct {
	CheckGitCommit    bool     `toml:"check_git_commit" json:"check_git_commit" doc:"The image's git.commit label must match HEAD."`
	CheckDependencies bool     `toml:"check_dependencies" json:"check_dependencies" doc:"The image's dependency hash must match."`
	CheckAgeThreshold Duration `toml:"check_age_threshold" json:"check_age_threshold" nullable:"true" check:"hours" doc:"Images older than this are stale; a number means hours."`
	OnStale           string   `toml:"on_stale" json:"on_stale" enum:"rebuild,warn,fail" doc:"What to do with a stale image."`
}

// ImageCaching is [build.image_caching].
type ImageCaching struct {
	Enabled   bool   `toml:"enabled" json:"enabled" doc:"Tag builds for reuse."`
	Strategy  string `toml:"strategy" json:"strategy" enum:"content_hash,git_commit,smart" doc:"What the cache key hashes."`
	TagFormat string `toml:"tag_format" json:"tag_format" check:"nonempty" doc:"Cached tag; placeholders {image}, {git_short}, {deps_hash}, {content_hash}."`
}

// StalenessDetection is [build.staleness_detection].
type StalenessDetection struct {
	CheckGitCommit   bool     `toml:"check_git_commit" json:"check_git_commit" doc:"Compare HEAD with the image."`
	CheckGitDirty    bool     `toml:"check_git_dirty" json:"check_git_dirty" doc:"Treat uncommitted changes as staleness."`
	CheckDeps        []string `toml:"check_dependencies" json:"check_dependencies" doc:"Dependency files (globs relative to the workspace) hashed into the cache key."`
	CheckDockerfile  bool     `toml:"check_dockerfile" json:"check_dockerfile" doc:"Hash the Dockerfile into the cache key."`
	MaxAgeThreshold  Duration `toml:"max_age_threshold" json:"max_age_threshold" nullable:"true" check:"hours" doc:"Oldest acceptable image; a number means hours."`
	OnStale          string   `toml:"on_stale" json:"on_stale" enum:"rebuild,warn,fail" doc:"What to do with a stale image."`
	OnDirtyWorkspace string   `toml:"on_dirty_workspace" json:"on_dirty_workspace" enum:"warn_and_rebuild,rebuild,warn,fail" doc:"What to do when the workspace has uncommitted changes."`
	OnMissing        string   `toml:"on_missing" json:"on_missing" enum:"build,warn,fail" doc:"What to do when no cached image exists."`
}
