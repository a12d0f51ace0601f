package spec

import (
	"strings"
	"testing"
)

// FuzzLoadWithinLimits parses arbitrary documents under small limits. It
// must never panic; a document over a limit is refused with an error that
// names the limit and does not echo the document; whatever is accepted
// stays within the limits.
func FuzzLoadWithinLimits(f *testing.F) {
	for _, seed := range []string{
		"[vm]\ncpus = 2\n",
		"\ufeff[vm]\nmounts = [\"a\", \"b\"]\n",
		"[a.b.c.d.e]\nx = 1\n",
		"x = [[[[[[1]]]]]]\n",
		"[vm]\nmounts = [" + strings.Repeat(`"m",`, 20) + "]\n",
		"a.b.c = { d = { e = [1, 2, { f = 3 }] } }\n",
		"[[sandboxes]]\n[[sandboxes]]\n",
	} {
		f.Add([]byte(seed))
	}
	lim := Limits{MaxBytes: 2048, MaxKeyDepth: 4, MaxArrayLen: 8}
	f.Fuzz(func(t *testing.T, doc []byte) {
		l, err := parseLayerWithin("fuzz.toml", doc, lim)
		if err != nil {
			e, ok := err.(Error)
			if !ok || e.Message == "" {
				t.Fatalf("error %T %v", err, err)
			}
			if len(e.Error()) > 600 {
				t.Fatalf("the error echoes the document (%d bytes): %.200s", len(e.Error()), e.Error())
			}
			return
		}
		if len(strings.TrimPrefix(string(doc), "\ufeff")) > lim.MaxBytes {
			t.Fatalf("a %d-byte document was accepted (limit %d)", len(doc), lim.MaxBytes)
		}
		withinLimits(t, l.tree, 0, lim)
		validateLayer(l, false, linked) // must not panic on anything accepted
	})
}

func withinLimits(t *testing.T, v any, depth int, lim Limits) {
	if depth > lim.MaxKeyDepth {
		t.Fatalf("a value %d levels deep was accepted (limit %d)", depth, lim.MaxKeyDepth)
	}
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			withinLimits(t, c, depth+1, lim)
		}
	case []any:
		if len(x) > lim.MaxArrayLen {
			t.Fatalf("an array of %d items was accepted (limit %d)", len(x), lim.MaxArrayLen)
		}
		for _, c := range x {
			withinLimits(t, c, depth+1, lim)
		}
	}
}
