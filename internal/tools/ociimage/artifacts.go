package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// programs are the image's executables, in /usr/local/bin. sbf-server is one of them because
// the workspace loop's `sbf reconcile` loads compose files in sbf-server's compose-load child.
var programs = []string{"sbf", "sbf-kubevirt", "sbf-server"}

// architectures are the image's platforms, all linux.
var architectures = []string{"amd64", "arm64"}

// An artifact is an entry of GoReleaser's dist/artifacts.json.
type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
}

// binaries finds each program's linux build for each architecture (architecture → program →
// path) in GoReleaser's list, rather than guessing its folder: GoReleaser names those after the
// build id and target (sbf-kubevirt-linux-arm64_linux_arm64_v8.0). Its paths are relative to
// where it ran, the repository's root.
func binaries(artifactsPath string) (map[string]map[string]string, error) {
	data, err := os.ReadFile(artifactsPath)
	if err != nil {
		return nil, fmt.Errorf("reading GoReleaser's artifacts: %w", err)
	}
	var list []artifact
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("reading GoReleaser's artifacts %s: %w", artifactsPath, err)
	}
	found := map[string]map[string]string{}
	for _, a := range list {
		if a.Type != "Binary" || a.Goos != "linux" || !slices.Contains(architectures, a.Goarch) ||
			!slices.Contains(programs, a.Name) {
			continue
		}
		if found[a.Goarch] == nil {
			found[a.Goarch] = map[string]string{}
		}
		if prev, ok := found[a.Goarch][a.Name]; ok {
			return nil, fmt.Errorf("%s lists two linux/%s builds of %s: %s and %s", artifactsPath, a.Goarch, a.Name,
				prev, a.Path)
		}
		found[a.Goarch][a.Name] = a.Path
	}
	for _, arch := range architectures {
		for _, p := range programs {
			if found[arch][p] == "" {
				return nil, fmt.Errorf("%s lists no linux/%s build of %s", artifactsPath, arch, p)
			}
		}
	}
	return found, nil
}
