package hostpath

import (
	"path"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// The hosts sbf's drivers run on compare names more loosely than Linux
// does: macOS (APFS, HFS+) ignores case and Unicode normalization, and
// HFS+ some invisible code points too; Windows (NTFS) ignores case and
// trailing dots and spaces, reads "name:stream" as a stream of name, and
// answers to each long name's 8.3 short name (.git is GIT~1). So a guest's
// ".GIT", ".git.", ".git::$INDEX_ALLOCATION" or "GIT~1" is .git there; the
// guard compares names by these keys on every host, since a workspace
// written on Linux may be read on a Mac.

// folder is Unicode case folding; it is stateless, so one is shared.
var folder = cases.Fold()

// nameKey is the key under which the host's filesystems may find a path
// element: without the code points HFS+ ignores (git's list), the stream
// part, trailing dots and spaces; case-folded and in one normal form.
func nameKey(elem string) string {
	if plainASCII(elem) {
		return strings.ToLower(elem) // what folding and normalizing give, without their cost
	}
	e := strings.Map(func(r rune) rune {
		if ignorable(r) {
			return -1
		}
		return r
	}, elem)
	if i := strings.IndexByte(e, ':'); i > 0 {
		e = e[:i]
	}
	if t := strings.TrimRight(e, ". "); t != "" {
		e = t
	}
	return norm.NFC.String(folder.String(norm.NFD.String(e)))
}

// plainASCII reports whether a name holds only ASCII, no ':' and does not
// end in a dot or a space: one whose key is its lower case.
func plainASCII(s string) bool {
	if s == "" || s[len(s)-1] == '.' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] == ':' {
			return false
		}
	}
	return true
}

// ignorable are the code points HFS+ leaves out of a name when it compares
// (the list git checks in is_hfs_dotgit): zero-width joiners and marks,
// bidi embeddings, deprecated format characters, the byte order mark.
func ignorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// elemMatch reports whether a path element may name what a pattern element
// (a path.Match glob) names on some host: by key, or as its 8.3 short name.
func elemMatch(pattern, elem string) bool {
	if elem == "." || elem == ".." || elem == "" {
		return false
	}
	pk, ek := nameKey(pattern), nameKey(elem)
	if ok, _ := path.Match(pk, ek); ok {
		return true
	}
	return shortMatch(pk, ek)
}

// splitShortName splits an 8.3 name as Windows makes them: up to six
// characters of the long name (or two and four hex digits of a hash), ~N,
// and up to three of its extension. Keys are case-folded, hence lower
// case. By hand, as ^([^~.]{1,6})~[0-9]{1,6}(?:\.([^.]{1,3}))?$ would
// cost every start its compilation (names_test.go holds them to agree).
func splitShortName(elem string) (base, ext string, ok bool) {
	base, rest, found := strings.Cut(elem, "~")
	if !found || base == "" || utf8.RuneCountInString(base) > 6 || strings.Contains(base, ".") {
		return "", "", false
	}
	digits, ext, dotted := strings.Cut(rest, ".")
	if digits == "" || len(digits) > 6 || strings.Trim(digits, "0123456789") != "" {
		return "", "", false
	}
	if n := utf8.RuneCountInString(ext); dotted && (n == 0 || n > 3 || strings.Contains(ext, ".")) {
		return "", "", false
	}
	return base, ext, true
}

// hashedShort reports whether base is that of a short name Windows makes
// once several long names share a start: two of their printable ASCII
// characters and four hex digits.
func hashedShort(base string) bool {
	if len(base) != 6 || base[0] < ' ' || base[0] > '~' || base[1] < ' ' || base[1] > '~' {
		return false
	}
	return strings.Trim(base[2:], "0123456789abcdef") == ""
}

// shortMatch reports whether elem (a key) has the form of a short name
// Windows could have given a long name the pattern (a key) matches.
func shortMatch(pattern, elem string) bool {
	sbase, sext, ok := splitShortName(elem)
	if !ok {
		return false
	}
	base, ext := shortParts(pattern)
	if ok, _ := path.Match(ext, sext); !ok {
		return false
	}
	if ok, _ := path.Match(base, sbase); ok {
		return true
	}
	return hashedShort(sbase) && globPrefixMatch(base, sbase[:2])
}

// shortParts turns a long-name pattern into patterns of its short name's
// base and extension: leading dots and spaces go, the last dot separates
// the extension, the base keeps six characters and the extension three
// (a * keeps whatever follows).
func shortParts(pattern string) (base, ext string) {
	long := strings.ReplaceAll(strings.TrimLeft(pattern, "."), " ", "")
	if i := strings.LastIndexByte(long, '.'); i >= 0 {
		base, ext = long[:i], long[i+1:]
	} else if base = long; strings.Contains(long, "*") {
		ext = "*"
	}
	return globHead(strings.ReplaceAll(base, ".", ""), 6), globHead(ext, 3)
}

// globHead keeps the first n characters a glob matches: literal runes, ?
// and [classes] count one each; a * ends it, kept.
func globHead(glob string, n int) string {
	var b strings.Builder
	for i, count := 0, 0; i < len(glob) && count < n; count++ {
		switch glob[i] {
		case '*':
			return b.String() + "*"
		case '[':
			j := strings.IndexByte(glob[i:], ']')
			if j < 0 {
				j = len(glob) - i - 1
			}
			b.WriteString(glob[i : i+j+1])
			i += j + 1
			continue
		}
		r := []rune(glob[i:])[0]
		if r > '~' || strings.ContainsRune("+,;=", r) {
			b.WriteByte('_') // what Windows puts in a short name for a character it cannot hold
		} else {
			b.WriteRune(r)
		}
		i += len(string(r))
	}
	return b.String()
}

// globPrefixMatch reports whether the first two characters of some name
// the glob matches can be prefix (a hashed short name keeps only two).
func globPrefixMatch(glob, prefix string) bool {
	head := globHead(glob, 2)
	if ok, _ := path.Match(head, prefix); ok {
		return true
	}
	ok, _ := path.Match(head+"*", prefix)
	return ok
}
