package names

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// rules pairs each hand-written rule with the regular expression it
// replaces (and the length bound kept beside it).
var rules = []struct {
	name  string
	match func(string) bool
	re    *regexp.Regexp
}{
	{"Snapshot", Snapshot, regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)},
	{"EnvVar", EnvVar, regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)},
	{"OnlyReferences", OnlyReferences, regexp.MustCompile(`^(?:\$\{[A-Za-z_][A-Za-z0-9_]*\})+$`)},
	{"Words", func(s string) bool { return Words(s, false) }, regexp.MustCompile(WordsPattern)},
	{"Words lower", func(s string) bool { return Words(s, true) }, regexp.MustCompile(`^[a-z0-9]+(?:[_-][a-z0-9]+)*$`)},
	{"Key", Key, regexp.MustCompile(`^[A-Za-z0-9_-]+$`)},
	{"Backend", Backend, regexp.MustCompile(`^[a-z][a-z0-9]*(?:[_-][a-z0-9]+)*$`)},
	{"BackendSetting", BackendSetting, regexp.MustCompile(`^[A-Za-z0-9_-]+$`)},
}

// bound is the length bound a rule keeps beside its regular expression.
var bound = map[string]int{"Backend": 32, "BackendSetting": 64}

// agree: what the regular expression says, except where Snapshot adds its
// one rule beyond it (no "..").
func agree(t *testing.T, s string) {
	t.Helper()
	for _, r := range rules {
		want := r.re.MatchString(s)
		if r.name == "Snapshot" && strings.Contains(s, "..") || bound[r.name] > 0 && len(s) > bound[r.name] {
			want = false
		}
		if got := r.match(s); got != want {
			t.Errorf("%s(%q) = %v, the regular expression says %v", r.name, s, got, want)
		}
	}
}

func TestRulesAgreeWithTheirRegularExpressions(t *testing.T) {
	for _, s := range []string{"", "a", "A", "0", "_", "-", ".", "a-b", "a--b", "a-", "-a", "a_b-c", "Ab9", "a.b",
		"a..b", strings.Repeat("a", 32), strings.Repeat("a", 33), strings.Repeat("a", 64), strings.Repeat("a", 65),
		"${A}", "${A}${b_1}", "${1}", "${A", "${}", "x${A}", "${A}x", "é", "a\n", "\na", "a\x00", "${A}\n"} {
		agree(t, s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aZ09_-.${}é\n"
	for range 200_000 {
		b := make([]rune, rng.IntN(8))
		for i := range b {
			b[i] = []rune(alphabet)[rng.IntN(len([]rune(alphabet)))]
		}
		agree(t, string(b))
	}
}

func FuzzRules(f *testing.F) {
	for _, s := range []string{"a-b", "${A}", "snap.1", "a..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { agree(t, s) })
}
