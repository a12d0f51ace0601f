package hostpath

import (
	"testing"

	"golang.org/x/text/unicode/norm"
)

// Protected names match as macOS and Windows compare names: whatever the
// case, the normal form, trailing dots and spaces, a stream suffix, an
// invisible code point HFS+ drops, or an 8.3 short name.
func TestGuardMatchesAsHostFilesystemsCompare(t *testing.T) {
	cafe := "caf\u00e9" // NFC
	g := Guard{Protect: append([]string{"deploy/secrets", cafe + "/*.key"}, DefaultProtect...)}
	for rel, want := range map[string]string{
		".SANDBOXFORGE.local.toml": ".sandboxforge*.toml", "sub/.SandboxForge.TOML": ".sandboxforge*.toml",
		".GIT/hooks/pre-commit": ".git", ".ENVRC": ".envrc", ".git.": ".git", ".git ": ".git", ".git. . ": ".git",
		".git::$INDEX_ALLOCATION/hooks/x": ".git", ".git:stream": ".git", "GIT~1/hooks/pre-commit": ".git",
		"git~2/config": ".git", "SANDBO~1.TOM": ".sandboxforge*.toml", "ENVRC~1": ".envrc",
		"LIMA-M~1.TOM": ".lima-mcp*.toml", "SA3F2B~1.TOM": ".sandboxforge*.toml", ".g\u200cit/config": ".git",
		"\ufeff.git/x": ".git", ".sandboxforge\u200d/state.json": ".sandboxforge", "DEPLOY/Secrets/k": "deploy/secrets",
		"deploy./secrets./k": "deploy/secrets", norm.NFD.String(cafe) + "/a.key": cafe + "/*.key",
		"CAF\u00c9/b.KEY": cafe + "/*.key", `x\.git\hooks`: ".git",
		"gitx": "", "GIT~1.TXT": "", "git": "", "GIT": "", ".gitignore": "", "SANDBOX.TOM": "", ".env": "",
		"cafe/a.key": "", "deploy/secretsx": "", "x~1": "", "ENVRD~1": "",
	} {
		r, bad := g.Rule(rel)
		if bad != (want != "") || r.Pattern != want {
			t.Errorf("%q: rule %q (%v), want %q", rel, r.Pattern, bad, want)
		}
	}
	if _, bad := (Guard{Protect: []string{norm.NFD.String(cafe)}}).Rule(cafe); !bad {
		t.Error("an NFD pattern does not protect the NFC name")
	}
}

func TestShortPartsOfPatterns(t *testing.T) {
	for pattern, want := range map[string][2]string{
		".git": {"git", ""}, ".sandboxforge*.toml": {"sandbo", "tom"}, "*.key": {"*", "key"},
		"ab*cdefgh": {"ab*", "*"}, ".lima-mcp*.toml": {"lima-m", "tom"}, "x+y.env": {"x_y", "env"},
	} {
		base, ext := shortParts(pattern)
		if base != want[0] || ext != want[1] {
			t.Errorf("%s: %q %q, want %q", pattern, base, ext, want)
		}
	}
}
