package hostpath

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sandboxforge/sbf/internal/coded"
)

// A Reserved place is a host file or folder outside any workspace that
// something reads as the user's own instructions: sbf's configuration and
// state, Lima's instances, the home folder's hidden files and folders
// (shells', git's, ssh's, every tool's), the XDG homes, the folders on
// PATH. No write carrying guest data lands in one, whatever root it goes
// through: defence in depth behind AllowedFolder, which refuses to allow
// such a place (or the home folder) at all.
type Reserved struct {
	Path string `json:"path"` // absolute; the place and everything below it
	Why  string `json:"why"`
	// Hidden makes the place the hidden entries directly below Path (the
	// home folder's dot-files and dot-folders) and what lies below them,
	// not Path itself: a list of such names cannot be complete.
	Hidden bool `json:"hidden,omitempty"`
}

const (
	whyConfig = "where this user's programs keep their configuration, data and state (an XDG home, ~/Library, " +
		"%APPDATA%)"
	whyHidden = "a hidden file or folder of the home folder (shells, git, ssh and other tools read them as " +
		"configuration)"
	whyState = "sbf's state and caches"
	whyLima  = "Lima's instances and caches (their configuration runs on this host)"
	whyShell = "read by a shell or a session as it starts (it runs commands)"
	whyTool  = "configuration a tool on this host runs commands from"
	whyPath  = "a folder on PATH (what is there runs in place of a command)"
)

// userPlaces is the one description of where a user's configuration lives,
// as the operator's environment (getenv) locates it: the home folder, and
// the places below or beside it that programs read as instructions.
// Reserved places are these (HostReserved); allowed folders are judged
// against them (AllowedFolder).
func userPlaces(getenv func(string) string) (home string, out []Reserved) {
	home = getenv("HOME")
	if home == "" {
		home = getenv("USERPROFILE")
	}
	add := func(why string, paths ...string) {
		for _, p := range paths {
			if p != "" && filepath.IsAbs(p) {
				out = append(out, Reserved{Path: filepath.Clean(p), Why: why})
			}
		}
	}
	for _, base := range [][2]string{{"XDG_CONFIG_HOME", ".config"}, {"XDG_DATA_HOME", ".local/share"},
		{"XDG_STATE_HOME", ".local/state"}, {"XDG_CACHE_HOME", ".cache"}} {
		add(whyConfig, homes(getenv(base[0]), home, base[1])...)
	}
	add(whyConfig, getenv("APPDATA"), getenv("LOCALAPPDATA"))
	add(whyState, getenv("SBF_STATE_HOME"), getenv("SBF_SIM_DIR"), "/var/cache/sandboxforge")
	if home == "" {
		add(whyState, filepath.Join(os.TempDir(), "sandboxforge"))
	} else {
		out = append(out, Reserved{Path: filepath.Clean(home), Why: whyHidden, Hidden: true})
		add(whyConfig, filepath.Join(home, "Library"))
		add(whyPath, filepath.Join(home, "bin"))
		add(whyShell, filepath.Join(home, "Documents", "PowerShell"), filepath.Join(home, "Documents",
			"WindowsPowerShell"))
	}
	add(whyLima, getenv("LIMA_HOME"))
	add(whyShell, getenv("ZDOTDIR"))
	add(whyTool, getenv("GIT_CONFIG_GLOBAL"))
	add(whyTool, filepath.SplitList(getenv("KUBECONFIG"))...)
	add(whyPath, filepath.SplitList(getenv("PATH"))...)
	return home, out
}

// Places are the reserved places of one environment, located when a write
// first needs them (finding their real paths costs a millisecond, which a
// command that writes nothing should not pay). The zero value and nil
// reserve nothing.
type Places struct {
	getenv func(string) string
	once   sync.Once
	list   []Reserved
}

// NewPlaces locates reserved places from getenv (the operator's environment).
func NewPlaces(getenv func(string) string) *Places { return &Places{getenv: getenv} }

// List returns the places.
func (p *Places) List() []Reserved {
	if p == nil || p.getenv == nil {
		return nil
	}
	p.once.Do(func() { p.list = HostReserved(p.getenv) })
	return p.list
}

// HostReserved lists this host's reserved places as the operator's
// environment (getenv) locates them, each also as its real path when links
// lead there (~/.config may be a link into a dotfiles repository).
func HostReserved(getenv func(string) string) []Reserved {
	_, places := userPlaces(getenv)
	return withRealPaths(places)
}

// homes are a base folder's candidates: the variable's value when set, and
// the default below home either way (the next run may not set it).
func homes(set, home, def string) []string {
	var out []string
	if set != "" {
		out = append(out, set)
	}
	if home != "" {
		out = append(out, filepath.Join(home, filepath.FromSlash(def)))
	}
	return out
}

// withRealPaths adds each place's real path (after links, for the part
// that exists) and drops repeats.
func withRealPaths(places []Reserved) []Reserved {
	var out []Reserved
	seen := map[string]bool{}
	for _, r := range places {
		for _, p := range []string{r.Path, realOr(r.Path)} {
			if key := placeKey(p); !seen[key] {
				seen[key] = true
				out = append(out, Reserved{Path: p, Why: r.Why, Hidden: r.Hidden})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Reserved) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func realOr(p string) string {
	if real, missing, err := RealPart(p); err == nil {
		return filepath.Join(real, missing)
	}
	return p
}

// placeKey compares absolute paths as the host's filesystems may.
func placeKey(p string) string {
	vol := filepath.VolumeName(p)
	var keys []string
	for _, e := range split(p[len(vol):]) {
		keys = append(keys, nameKey(e))
	}
	return strings.ToLower(vol) + "/" + strings.Join(keys, "/")
}

// reservedAt returns the place abs (absolute, real) lies in, if any.
func reservedAt(places []Reserved, abs string) (Reserved, bool) {
	key := placeKey(abs)
	for _, r := range places {
		k := strings.TrimSuffix(placeKey(r.Path), "/")
		switch {
		case r.Hidden:
			if rest, ok := strings.CutPrefix(key, k+"/"); ok && strings.HasPrefix(rest, ".") {
				// Named as found: the hidden entry of the folder abs lies in.
				elems := split(abs[len(filepath.VolumeName(abs)):])
				depth := len(split(r.Path[len(filepath.VolumeName(r.Path)):]))
				return Reserved{Path: filepath.Join(r.Path, elems[depth]), Why: r.Why}, true
			}
		case key == k || strings.HasPrefix(key, k+"/"):
			return r, true
		}
	}
	return Reserved{}, false
}

// reservedBelow returns a place that lies below abs: a link at abs would
// move it to wherever the link leads.
func reservedBelow(places []Reserved, abs string) (Reserved, bool) {
	key := strings.TrimSuffix(placeKey(abs), "/")
	for _, r := range places {
		k := placeKey(r.Path)
		// A hidden place lies below abs when its folder is abs or below it.
		if strings.HasPrefix(k, key+"/") || r.Hidden && strings.TrimSuffix(k, "/") == key {
			return r, true
		}
	}
	return Reserved{}, false
}

// AllowedFolder refuses to allow a folder (absolute and real) that is not a
// folder of data: the home folder or one holding it, a reserved place or a
// folder inside one, or a folder holding where the user's programs keep
// their configuration. what names the setting ("allowed path"); the
// refusal says what to allow instead.
func AllowedFolder(getenv func(string) string, what, abs string) error {
	home, places := userPlaces(getenv)
	places = withRealPaths(places)
	refuse := func(why string) error {
		return coded.New(Denied, map[string]any{"path": abs, "setting": what, "reason": why},
			"%s %s %s: allow a folder of data instead (a project folder, ~/src, a scratch folder); copies from "+
				"sandboxes land there, and a folder of configuration would let a guest change how this host behaves",
			what, abs, why)
	}
	if home != "" {
		for _, h := range []string{filepath.Clean(home), realOr(filepath.Clean(home))} {
			if placeKey(abs) == placeKey(h) {
				return refuse("is the home folder")
			}
			if Within(h, []string{abs}) {
				return refuse("holds the home folder " + h)
			}
		}
	}
	if r, ok := reservedAt(places, abs); ok {
		return refuse(fmt.Sprintf("lies in %s (%s)", r.Path, r.Why))
	}
	for _, r := range places {
		if r.Why == whyConfig && placeKey(r.Path) != placeKey(abs) && Within(r.Path, []string{abs}) {
			return refuse(fmt.Sprintf("holds %s (%s)", r.Path, r.Why))
		}
	}
	return nil
}
