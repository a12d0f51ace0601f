package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// treeDocs are documents on the edges of TOML's rules on keys and values:
// tables a dotted key made, implicit tables, arrays of tables, inline
// tables inside arrays, numbers and dates of every form, and documents
// each of those rules refuses.
var treeDocs = []string{
	"[a]\nb.c = 1\n[a.b.d]\ne = 2\n",
	"[[a]]\nb = 1\n[[a]]\nb = 2\n[a.c]\nd = 3\n",
	"[a]\nx = 1\n[[a.b]]\ny = 2\n[[a.b]]\ny = 3\n[a.b.z]\nw = 4\n",
	"[[a.b]]\n[a]\nc = 1\n",
	"a.b = 1\na.c = 2\n[a.d]\ne = 3\n",
	"a = [{b = 1}, {b = 2, c = {d = [1, 2.5, 1979-05-27T07:32:00Z]}}]\n",
	"a = [[1, 2], ['x', \"y\"], [], [{}]]\n",
	"x = 1979-05-27\ny = 07:32:00\nz = 1979-05-27T07:32:00\nw = 1979-05-27 07:32:00.999999-07:00\n",
	"i = 0xDEAD_BEEF\no = 0o755\nb = 0b1101\nf = -inf\nn = nan\ne = 6.626e-34\nu = 1_000\nm = -0\np = +1.5\n",
	"s = '''\nraw\\n'''\nt = \"\"\"\nline \\\n  cont\"\"\"\nq = \"\\u00e9\\t\"\n",
	"\"quoted.key\".x = 1\n'lit' = 2\n\"\" = 3\n",
	"a = [ # a comment\n  1,\n  2, # another\n]\nb = true\nc = false\n",
	"t = {a.b = 1, a.c = {d = 2}}\n",
	"[a]\n[a]\n",
	"[a.b]\n[a]\n[a]\n",
	"[a.b.c]\n[a]\nb.d = 1\n",
	"a = {b = 1}\n[a.c]\n",
	"a = []\n[[a]]\n",
	"a = 1\na = 2\n",
	"a.b = 1\n[a]\n",
	"a.b = 1\n[a.b]\n",
	"[[a]]\n[a]\n",
	"[a]\n[[a]]\n",
	"a = {b = 1, b = 2}\n",
	"a = [{b = 1, b = 2}]\n",
	"[a]\nb = 1\n[a.b]\n",
	"t = {a = 1}\nt.b = 2\n",
	"i = 9223372036854775808\n",
	"i = 01\n",
	"d = 1979-13-27\n",
	"f = 1.\n",
	"x = [1, 2,]\ny = {}\n",
}

// builtTree runs the builder alone on data: ok is false when the parser
// or the builder stopped (parseLayer then asks go-toml's decoder).
func builtTree(data []byte) (map[string]any, bool) {
	b, p := buildTree(data)
	if p.Error() != nil {
		return nil, false
	}
	return b.finish()
}

// sameAsGoTOML fails t unless the builder's tree is go-toml's, and it
// accepts only what go-toml accepts. %#v compares NaN with NaN and prints
// maps sorted.
func sameAsGoTOML(t *testing.T, data []byte) (accepted bool) {
	t.Helper()
	want := map[string]any{}
	wantErr := toml.Unmarshal(data, &want)
	got, ok := builtTree(data)
	switch {
	case ok && wantErr != nil:
		t.Fatalf("the builder accepted what go-toml refuses (%v):\n%s\ngot %#v", wantErr, data, got)
	case !ok:
		return false // decoded by go-toml itself
	}
	if g, w := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", want); g != w {
		t.Fatalf("trees differ for\n%s\nbuilder: %s\ngo-toml: %s", data, g, w)
	}
	return true
}

func TestTheTreeIsGoTOMLs(t *testing.T) {
	accepted := 0
	for _, doc := range treeDocs {
		want := map[string]any{}
		valid := toml.Unmarshal([]byte(doc), &want) == nil
		ok := sameAsGoTOML(t, []byte(doc))
		if valid && !ok {
			t.Errorf("the builder refused a valid document, left to go-toml's decoder:\n%s", doc)
		}
		if ok {
			accepted++
		}
		// Whoever decodes it, decodeTOML answers as go-toml does.
		tree, err := decodeTOML([]byte(doc))
		if (err == nil) != valid || valid && fmt.Sprintf("%#v", tree) != fmt.Sprintf("%#v", want) {
			t.Errorf("decodeTOML(%q) = %#v, %v; go-toml: %#v", doc, tree, err, want)
		}
	}
	if accepted < 10 {
		t.Errorf("the builder accepted %d of the documents; the valid ones are more", accepted)
	}
}

// TestALayersErrorsKeepTheirPositions: a document the builder refuses is
// reported by go-toml's decoder, at its place.
func TestALayersErrorsKeepTheirPositions(t *testing.T) {
	for doc, want := range map[string]string{
		"[a]\nx = 1\n[a]\n":       "3:",
		"a = 1\nb = 2\na = 3\n":   "3:",
		"a = 1\nb = 01\n":         "2:",
		"a = 1\n[b\n":             "2:",
		"a.b = 1\nc = 2\n[a.b]\n": "3:",
	} {
		_, err := parseLayer("f.toml", []byte(doc))
		var e Error
		if !asError(err, &e) || !strings.HasPrefix(fmt.Sprintf("%d:", e.Line), want) ||
			!strings.Contains(e.Message, "invalid TOML") {
			t.Errorf("parseLayer(%q) = %v, want invalid TOML on line %s", doc, err, want)
		}
	}
}

func asError(err error, e *Error) bool {
	got, ok := err.(Error)
	*e = got
	return ok
}

// FuzzTreeMatchesGoTOML holds the builder to go-toml's decoder: the same
// tree for every document it accepts, and nothing go-toml refuses.
func FuzzTreeMatchesGoTOML(f *testing.F) {
	for _, doc := range treeDocs {
		f.Add([]byte(doc))
	}
	addSpecSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) { sameAsGoTOML(t, data) })
}
