package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-20T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	checkout := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{name: "release build: the linker's values win over the checkout's",
			version: "v1.2.3", commit: "abc", date: "2026-11-25T12:00:00Z", bi: checkout,
			want: Info{Version: "v1.2.3", Commit: "abc", Date: "2026-11-25T12:00:00Z", Go: "go1.26.8"}},
		{name: "source build in a checkout", bi: checkout,
			want: Info{Version: Devel, Commit: vcs[0].Value, Date: vcs[1].Value, Modified: true, Go: "go1.26.8"}},
		{name: "source build with a VCS pseudo-version names no release",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8",
				Main: debug.Module{Version: "v0.0.0-20261120100000-0123456789ab+dirty"}},
			want: Info{Version: Devel, Go: "go1.26.8"}},
		{name: "go install of a tagged module",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}},
			want: Info{Version: "v1.4.0", Go: "go1.26.8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fromBuild(tc.version, tc.commit, tc.date, tc.bi)
			got.OS, got.Arch = "", ""
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
