package hostpath

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// A Reserved place is a host file or folder outside any workspace that
// something reads as the user's own instructions: sbf's configuration and
// state, Lima's instances, the shell's and git's startup files, ssh's keys,
// the folders on PATH. An operator who allows a folder holding one (~,
// often) allows copies there, not a guest rewriting how the host behaves:
// no write carrying guest data lands in one, whatever root it goes through.
type Reserved struct {
	Path string `json:"path"` // absolute; the place and everything below it
	Why  string `json:"why"`
}

const (
	whyConfig = "sbf's global configuration (it says what sbf may do)"
	whyState  = "sbf's state and caches"
	whyLima   = "Lima's instances and caches (their configuration runs on this host)"
	whyShell  = "read by a shell or a session as it starts (it runs commands)"
	whyTool   = "configuration a tool on this host runs commands from"
	whySSH    = "ssh's keys and configuration"
	whyPath   = "a folder on PATH (what is there runs in place of a command)"
)

// configNames are the folders under a config home sbf reads its global
// configuration from, older names included (spec reads them all).
var configNames = []string{"sandboxforge", "sandboxforge-mcp", "orbitforge-mcp", "lima-mcp"}

// homeFiles are below the home folder: what a login, a shell, a desktop
// session, git, ssh or a cluster client reads as the user's instructions.
var homeFiles = map[string][]string{
	whyShell: {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc",
		".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".logout", ".kshrc", ".mkshrc",
		".inputrc", ".pam_environment", ".xprofile", ".xinitrc", ".xsession", ".xsessionrc",
		".config/fish", ".config/nushell", ".config/powershell", ".config/environment.d", ".config/autostart",
		".config/systemd/user", "Library/LaunchAgents", "Documents/PowerShell", "Documents/WindowsPowerShell"},
	whyTool: {".gitconfig", ".config/git", ".docker", ".kube"},
	whySSH:  {".ssh"},
	whyPath: {".local/bin", "bin"},
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
	home := getenv("HOME")
	if home == "" {
		home = getenv("USERPROFILE")
	}
	var out []Reserved
	add := func(why string, paths ...string) {
		for _, p := range paths {
			if p != "" && filepath.IsAbs(p) {
				out = append(out, Reserved{Path: filepath.Clean(p), Why: why})
			}
		}
	}
	for _, configHome := range homes(getenv("XDG_CONFIG_HOME"), home, ".config") {
		for _, name := range configNames {
			add(whyConfig, filepath.Join(configHome, name))
		}
		add(whyTool, filepath.Join(configHome, "git"))
	}
	add(whyState, getenv("SBF_STATE_HOME"), getenv("SBF_SIM_DIR"), "/var/cache/sandboxforge")
	for _, stateHome := range homes(getenv("XDG_STATE_HOME"), home, ".local/state") {
		add(whyState, filepath.Join(stateHome, "sandboxforge"))
	}
	for _, cacheHome := range homes(getenv("XDG_CACHE_HOME"), home, ".cache") {
		add(whyState, filepath.Join(cacheHome, "sandboxforge"))
		add(whyLima, filepath.Join(cacheHome, "lima"))
	}
	if home == "" {
		add(whyState, filepath.Join(os.TempDir(), "sandboxforge"))
	} else {
		add(whyLima, filepath.Join(home, ".lima"), filepath.Join(home, "Library", "Caches", "lima"))
		for why, files := range homeFiles {
			for _, f := range files {
				add(why, filepath.Join(home, filepath.FromSlash(f)))
			}
		}
	}
	add(whyLima, getenv("LIMA_HOME"))
	add(whyShell, getenv("ZDOTDIR"))
	add(whyTool, getenv("GIT_CONFIG_GLOBAL"))
	add(whyTool, filepath.SplitList(getenv("KUBECONFIG"))...)
	add(whyPath, filepath.SplitList(getenv("PATH"))...)
	return withRealPaths(out)
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
				out = append(out, Reserved{Path: p, Why: r.Why})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Reserved) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func realOr(p string) string {
	if real, err := resolveHost(p); err == nil {
		return real
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
		if k := placeKey(r.Path); key == k || strings.HasPrefix(key, k+"/") {
			return r, true
		}
	}
	return Reserved{}, false
}

// reservedBelow returns a place that lies below abs: a link at abs would
// move it to wherever the link leads.
func reservedBelow(places []Reserved, abs string) (Reserved, bool) {
	key := placeKey(abs)
	for _, r := range places {
		if strings.HasPrefix(placeKey(r.Path), strings.TrimSuffix(key, "/")+"/") {
			return r, true
		}
	}
	return Reserved{}, false
}
