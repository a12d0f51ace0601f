package hostpath

import (
	"os"
	"path"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
)

// A Rule names host files that guest data must never become: what sbf or
// git would later read as instructions from the operator.
type Rule struct {
	Pattern string // matched against each element of a path, or the whole path when it holds a '/'
	Why     string
}

// Protected are the built-in rules; a workspace's [sync] protect adds to
// them and cannot take any away.
var Protected = []Rule{
	{".sandboxforge*.toml", "sbf's workspace configuration"},
	{".orbitforge*.toml", "sbf's workspace configuration (an older name)"},
	{".lima-mcp*.toml", "sbf's workspace configuration (an older name)"},
	{".sandboxforge", "sbf's managed overrides and state"},
	{".git", "git's metadata (its hooks and config run on this host)"},
}

// DefaultProtect is [sync] protect when a workspace says nothing: direnv
// runs an .envrc in any folder a person enters.
var DefaultProtect = []string{".envrc"}

// Guard refuses guest-originated writes to protected paths.
type Guard struct {
	Protect []string // the workspace's [sync] protect patterns
	// OutsideWorkspace refuses every hidden name: set by the writer for a
	// root that is not the workspace (a folder the operator allowed), where
	// a dot-file is some tool's configuration (~/.aws, ~/.npmrc), never a
	// project's.
	OutsideWorkspace bool
}

// hiddenOutside is the rule OutsideWorkspace adds.
var hiddenOutside = Rule{".*", "a hidden name outside the workspace (tools read dot-files as configuration); " +
	"copy into the workspace instead"}

// Rule returns the rule a slash-separated relative path breaks, if any.
// Names compare as the hosts' filesystems compare them (names.go): .GIT,
// .git. and GIT~1 are .git.
func (g Guard) Rule(rel string) (Rule, bool) {
	rel = path.Clean("/" + strings.ReplaceAll(rel, `\`, "/"))[1:]
	if rel == "" {
		return Rule{}, false
	}
	elems := strings.Split(rel, "/")
	for _, r := range g.rules() {
		if strings.Contains(r.Pattern, "/") {
			if matchPrefix(r.Pattern, elems) {
				return r, true
			}
			continue
		}
		for _, e := range elems {
			if elemMatch(r.Pattern, e) {
				return r, true
			}
		}
	}
	return Rule{}, false
}

// Above returns the rule of a pattern holding '/' whose path passes through
// rel ("deploy" for deploy/secrets): a link there would move what the rule
// protects to wherever it leads.
func (g Guard) Above(rel string) (Rule, bool) {
	rel = path.Clean("/" + strings.ReplaceAll(rel, `\`, "/"))[1:]
	if rel == "" {
		return Rule{}, false
	}
	elems := strings.Split(rel, "/")
	for _, r := range g.rules() {
		pattern := strings.Split(strings.Trim(r.Pattern, "/"), "/")
		if len(pattern) > len(elems) && elemsMatch(pattern[:len(elems)], elems) {
			return r, true
		}
	}
	return Rule{}, false
}

func (g Guard) rules() []Rule {
	rules := Protected
	for _, p := range g.Protect {
		rules = append(rules[:len(rules):len(rules)], Rule{p, "listed in [sync] protect"})
	}
	if g.OutsideWorkspace {
		rules = append(rules[:len(rules):len(rules)], hiddenOutside)
	}
	return rules
}

// matchPrefix matches a pattern holding '/' against the path or any of
// its leading folders, so "build/secrets" protects what lies below it.
func matchPrefix(pattern string, elems []string) bool {
	pat := strings.Split(strings.Trim(pattern, "/"), "/")
	return len(pat) <= len(elems) && elemsMatch(pat, elems[:len(pat)])
}

func elemsMatch(pattern, elems []string) bool {
	for i := range pattern {
		if !elemMatch(pattern[i], elems[i]) {
			return false
		}
	}
	return true
}

// Check is Rule as an error: HOST_PATH_DENIED naming the rule.
func (g Guard) Check(rel, shown string) error {
	r, ok := g.Rule(rel)
	if !ok {
		return nil
	}
	return coded.New(Denied, map[string]any{"path": shown, "rule": r.Pattern, "reason": r.Why},
		"%s is protected from what a sandbox writes (%s: %s)", shown, r.Pattern, r.Why)
}

// HoldsProtected reports whether a folder directly holds an entry the
// built-in rules protect, compared as they compare names everywhere (.GIT,
// an older config name, an 8.3 short name). A folder that cannot be listed
// holds nothing known.
func HoldsProtected(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if _, ok := (Guard{}).Rule(e.Name()); ok {
			return true
		}
	}
	return false
}
