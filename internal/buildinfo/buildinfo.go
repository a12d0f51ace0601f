// Package buildinfo says which sbf this is: the release version, commit and
// build date a release build sets at link time, or, for a source build,
// "devel" with the version control facts the Go toolchain embeds.
package buildinfo

import (
	"runtime"
	"runtime/debug"

	"golang.org/x/mod/module"
)

// Set by release builds:
//
//	-ldflags "-X github.com/sandboxforge/sbf/internal/buildinfo.version=v1.2.3
//	          -X github.com/sandboxforge/sbf/internal/buildinfo.commit=<sha>
//	          -X github.com/sandboxforge/sbf/internal/buildinfo.date=<RFC 3339>"
var version, commit, date string

// Devel is the version of a build that was not given one.
const Devel = "devel"

// Info describes the running binary.
type Info struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`             // empty when unknown
	Date     string `json:"date"`               // RFC 3339; empty when unknown
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

// Read returns what the linker set, filled in from the build information
// Go embeds where the linker set nothing.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(version, commit, date, bi)
}

// fromBuild is Read with its inputs passed in, so each kind of build can
// be tested.
func fromBuild(version, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, Date: date,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi == nil {
		if info.Version == "" {
			info.Version = Devel
		}
		return info
	}
	info.Go = bi.GoVersion
	if info.Version == "" {
		// `go install ...@v1.2.3` records the module version; a build in a
		// checkout records "(devel)" or, since Go 1.24, a pseudo-version
		// derived from the VCS state, which names no release.
		info.Version = Devel
		if v := bi.Main.Version; v != "" && v != "(devel)" && !module.IsPseudoVersion(v) {
			info.Version = v
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if info.Commit == "" {
				info.Commit = s.Value
			}
		case "vcs.time":
			if info.Date == "" {
				info.Date = s.Value
			}
		case "vcs.modified":
			info.Modified = s.Value == "true" && commit == ""
		}
	}
	return info
}
