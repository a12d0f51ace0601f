package hostpath

import (
	"math/rand/v2"
	"regexp"
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

// The short-name rules written by hand say what the regular expressions
// they replace say.
func TestShortNameRulesAgreeWithTheirRegularExpressions(t *testing.T) {
	shortRE := regexp.MustCompile(`^([^~.]{1,6})~[0-9]{1,6}(?:\.([^.]{1,3}))?$`)
	hashedRE := regexp.MustCompile(`^[ -~]{2}[0-9a-f]{4}$`)
	check := func(s string) {
		m := shortRE.FindStringSubmatch(s)
		base, ext, ok := splitShortName(s)
		if ok != (m != nil) || ok && (base != m[1] || ext != m[2]) {
			t.Errorf("splitShortName(%q) = %q %q %v; the regular expression: %q", s, base, ext, ok, m)
		}
		if got := hashedShort(s); got != hashedRE.MatchString(s) {
			t.Errorf("hashedShort(%q) = %v", s, got)
		}
	}
	for _, s := range []string{"progra~1", "progra~1.txt", "pr~123456", "pr~1234567", "~1", "a.b~1", "abcdefg~1",
		"ab~1.", "ab~1.tx~", "ab~1.a.b", "ab~x", "ab12ef", "ab12eF", "é12345", "~~0000", "ab12ef~1.txt"} {
		check(s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune("a1f~.é F")
	for range 200_000 {
		b := make([]rune, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		check(string(b))
	}
}
