package hostpath

import (
	"archive/tar"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"unicode/utf8"
)

// unpacker judges each entry of an archive before it is written: by its
// name, by where the links already in the root lead it, and, for a link,
// by where its target leads among the links made before it.
type unpacker struct {
	root    *os.Root
	dst     string // as the caller named it, below the root
	realDst string // dst after links, slash-separated
	o       UnpackOptions
	rv      resolver
	rep     Report
	gone    []string // protected folders skipped: what lies below them goes unreported
	spent   int64    // bytes charged against o.MaxBytes
	written written
}

// written is what an unpack wrote, for a caller told it stopped.
type written struct {
	entries int
	bytes   int64
	first   []string
}

func newUnpacker(root *os.Root, dst string, o UnpackOptions) *unpacker {
	u := &unpacker{root: root, dst: filepath.Clean(dst), o: o, rv: resolver{root: root, rootAbs: o.RootAbs}}
	u.realDst = filepath.ToSlash(u.dst)
	if real, err := u.rv.resolve(u.realDst, true); err == nil {
		u.realDst = real
	}
	if u.realDst == "." {
		u.realDst = ""
	}
	return u
}

// judging reports whether entries are judged at all (the zero options of a
// simulated guest's side of a copy judge nothing).
func (u *unpacker) judging() bool {
	return u.o.Guard != nil || u.o.LinksInside || len(u.o.Reserved) > 0
}

// UnnamableRule is the rule of a SkippedPath whose name is not UTF-8.
const UnnamableRule = "UTF-8 names"

// unnamable reports (and records) an entry whose name is not UTF-8: a Mac
// or Windows host cannot hold it, no report can name it as it is, and no
// tool reading a workspace expects it. It is skipped, not the whole copy.
func (u *unpacker) unnamable(p string) bool {
	if !u.judging() || utf8.ValidString(p) {
		return false
	}
	if Within(p, u.gone) {
		return true
	}
	u.rep.SkippedPaths = append(u.rep.SkippedPaths, SkippedPath{Path: strconv.QuoteToASCII(filepath.ToSlash(p)),
		Rule: UnnamableRule, Reason: "its name is not UTF-8 text, which a report cannot show and a Mac or Windows " +
			"host cannot hold"})
	u.gone = append(u.gone, p)
	return true
}

// refused reports (and records) an entry a rule refuses, judged by its
// name and by the real path it would be written at: through the links on
// its way, and through one at its end only for a folder (a file or a link
// replaces a link there).
func (u *unpacker) refused(p string, folder bool) bool {
	if !u.judging() {
		return false
	}
	if Within(p, u.gone) {
		return true
	}
	slash := filepath.ToSlash(p)
	real, err := u.rv.resolve(slash, folder)
	rule, why := u.rule(slash)
	if err != nil {
		rule, why = "a link on its way", err.Error()
	} else if rule == "" {
		rule, why = u.rule(real)
	}
	if rule == "" && why == "" {
		return false
	}
	u.rep.SkippedPaths = append(u.rep.SkippedPaths, SkippedPath{Path: slash, Rule: rule, Reason: why})
	u.gone = append(u.gone, p)
	return true
}

// rule names the guard rule or reserved place a slash path below the root
// lies in ("" when none).
func (u *unpacker) rule(slash string) (rule, why string) {
	if u.o.Guard != nil {
		if r, bad := u.o.Guard.Rule(slash); bad {
			return r.Pattern, r.Why
		}
	}
	if u.o.RootAbs != "" {
		if r, bad := reservedAt(u.o.Reserved, filepath.Join(u.o.RootAbs, filepath.FromSlash(slash))); bad {
			return r.Path, r.Why
		}
	}
	return "", ""
}

// linkAllowed keeps a symlink only when, made where it will be made (after
// the links before it), its target leads inside the destination and not
// into a protected path; and when it replaces no folder and moves no
// protected path (a link named deploy would move deploy/secrets).
func (u *unpacker) linkAllowed(p, target string) bool {
	if !u.o.LinksInside {
		return true
	}
	reason := u.linkProblem(filepath.ToSlash(p), target)
	if reason != "" {
		u.rep.SkippedLinks = append(u.rep.SkippedLinks,
			SkippedLink{Path: filepath.ToSlash(p), Target: clipName(target), Reason: reason})
	}
	return reason == ""
}

func (u *unpacker) linkProblem(slash, target string) string {
	if isAbs(target) {
		return errAbsolute.Error()
	}
	dir, err := u.rv.resolve(path.Dir(slash), true)
	if err != nil {
		return err.Error()
	}
	at := path.Join(dir, path.Base(slash))
	if k, _, err := u.rv.kindOf(at); err != nil {
		return err.Error()
	} else if k == fs.ModeDir {
		return errReplaces.Error()
	}
	if !below(u.realDst, at) {
		return errOutside.Error()
	}
	if rule, why := u.above(at); rule != "" {
		return "would move " + rule + " (" + why + ")"
	}
	u.rv.pending = map[string]string{at: target}
	real, err := u.rv.target(dir, target)
	u.rv.pending = nil
	switch {
	case err != nil:
		return err.Error()
	case !below(u.realDst, real):
		return errOutside.Error()
	}
	if rule, why := u.rule(real); rule != "" {
		return "leads into " + rule + " (" + why + ")"
	}
	return ""
}

// above names what a link at the slash path would move: a protected path
// or reserved place there or below it.
func (u *unpacker) above(at string) (rule, why string) {
	if rule, why := u.rule(at); rule != "" {
		return rule, why
	}
	if u.o.Guard != nil {
		if r, bad := u.o.Guard.Above(at); bad {
			return r.Pattern, r.Why
		}
	}
	if u.o.RootAbs != "" {
		if r, bad := reservedBelow(u.o.Reserved, filepath.Join(u.o.RootAbs, filepath.FromSlash(at))); bad {
			return r.Path, r.Why
		}
	}
	return "", ""
}

// makeLink makes a judged link: its folder first, in place of a file or
// link there (never of a folder: linkAllowed refused that).
func makeLink(root *os.Root, p, target string) error {
	if err := root.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if info, err := root.Lstat(p); err == nil && !info.IsDir() {
		if err := root.Remove(p); err != nil {
			return err
		}
	}
	return root.Symlink(target, p)
}

// headerBytes is what tar spends on an entry besides its content.
const headerBytes = 512

// charge counts an entry against the ceiling, refusing the one that would
// pass it.
func (u *unpacker) charge(p string, hdr *tar.Header) error {
	if u.o.MaxBytes <= 0 {
		return nil
	}
	cost := headerBytes + max(hdr.Size, 0)
	if u.spent+cost > u.o.MaxBytes {
		return tooLarge(u.o.MaxBytes, filepath.ToSlash(p), u.written)
	}
	u.spent += cost
	return nil
}

// wrote records an entry written.
func (u *unpacker) wrote(p string, size int64) {
	u.written.entries++
	u.written.bytes += size
	if len(u.written.first) < 20 {
		u.written.first = append(u.written.first, clipName(filepath.ToSlash(p)))
	}
}
