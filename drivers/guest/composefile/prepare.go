package composefile

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/lazyre"
	"github.com/sandboxforge/sbf/spec"
)

// loading is one sandbox's compose load, its paths checked.
type loading struct {
	o              guest.LoadOptions
	dir            string   // the project directory
	files          []string // the compose files
	envFiles       []string // [compose] env_files
	environ        []string // what interpolation starts from, before any env file
	check          *checker
	opts           *cli.ProjectOptions // once the paths are checked
	specProblems   spec.Errors
	fileUnreadable error
}

// prepare resolves the load's files and checks every path the spec and
// the compose files name; problems end it there.
func prepare(o guest.LoadOptions) (*loading, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	l := &loading{o: o, dir: root}
	if o.Compose.ProjectDirectory != "" {
		l.dir = join(root, o.Compose.ProjectDirectory)
	}
	if l.check, err = newChecker(root, l.dir); err != nil {
		return nil, err
	}
	if err := l.checkAll(); err != nil {
		l.check.Close()
		return nil, err
	}
	return l, nil
}

func (l *loading) checkAll() error {
	l.checkSpec()
	if l.fileUnreadable != nil && len(l.specProblems) == 0 {
		return l.fileUnreadable
	}
	if err := l.overLimit(); err != nil {
		return err
	}
	env := map[string]string{}
	for _, kv := range l.environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if len(l.specProblems) == 0 {
		var err error
		if l.opts, err = l.options(); err != nil { // reads .env and env_files, as the loader will
			return l.loaderError(err)
		}
		env = l.opts.Environment
	}
	if len(l.specProblems) == 0 || l.check.inside(l.dir) {
		for _, f := range l.files {
			if l.check.inside(f) {
				l.check.walk(f, scope{base: l.dir, wd: l.dir, loader: l.dir, env: env})
			}
		}
	}
	if all := append(l.specProblems, l.check.problems...); len(all) > 0 {
		return &guest.ProjectError{File: strings.Join(l.files, ", "), Problems: tidy(all)}
	}
	return l.overLimit()
}

// overLimit is the size bound a file the load reads went past, if one did
// (composerun.MaxFileBytes, MaxLoadBytes): compose-go does not run then.
func (l *loading) overLimit() error {
	if l.check.limit == nil {
		return nil
	}
	return &guest.ProjectError{File: strings.Join(l.files, ", "), Err: l.check.limit}
}

// checkSpec holds the [compose] table's paths to the workspace: the
// project directory, the compose files and env files, and the project's
// .env, which compose-go reads unless env_files names others.
func (l *loading) checkSpec() {
	c, root, comp := l.check, l.check.rootDir, l.o.Compose
	outside := func(key string) {
		l.specProblems = append(l.specProblems, spec.Error{File: spec.FileName, Key: key, Message: outsideMessage})
	}
	if comp.ProjectDirectory != "" && !c.inside(l.dir) {
		outside("compose.project_directory")
	}
	for i, f := range comp.Files {
		p := join(root, f)
		l.files = append(l.files, p)
		if !c.inside(p) {
			outside(fmt.Sprintf("compose.files[%d]", i))
		} else if rel, _ := filepath.Rel(root, p); l.fileUnreadable == nil {
			if _, err := c.root.Stat(rel); err != nil {
				l.fileUnreadable = &guest.ProjectError{File: p,
					Err: fmt.Errorf("compose file not readable (sandbox %s has compose = true): %w", l.o.Sandbox, err)}
			}
		}
	}
	for i, f := range comp.EnvFiles {
		p := join(root, f)
		l.envFiles = append(l.envFiles, p)
		if !c.inside(p) {
			outside(fmt.Sprintf("compose.env_files[%d]", i))
		} else {
			c.size(p)
		}
	}
	dot := filepath.Join(l.dir, ".env")
	if len(comp.EnvFiles) == 0 && c.inside(l.dir) && c.exists(dot) {
		if !c.inside(dot) {
			l.specProblems = append(l.specProblems, spec.Error{File: dot, Key: ".env", Message: outsideMessage})
		} else {
			c.size(dot)
		}
	}
	if comp.UseProcessEnv {
		l.environ = append(l.environ, l.o.Environ...)
	}
	for _, k := range slices.Sorted(maps.Keys(l.o.Env)) {
		l.environ = append(l.environ, k+"="+l.o.Env[k])
	}
}

// options are compose-go's, reading .env (or env_files) as it makes them.
func (l *loading) options() (*cli.ProjectOptions, error) {
	return cli.NewProjectOptions(l.files,
		cli.WithWorkingDirectory(l.dir),
		cli.WithName(guest.ProjectName(l.o.Sandbox)),
		cli.WithEnv(l.environ),
		cli.WithEnvFiles(l.envFiles...),
		cli.WithDotEnv,
		cli.WithProfiles(l.o.Compose.Profiles),
		cli.WithResolvedPaths(true),
	)
}

// tidy sorts problems by file and position and drops repeats (a service
// checked for itself and for one that extends it).
func tidy(es spec.Errors) spec.Errors {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Key < b.Key
	})
	return slices.Compact(es)
}

// loaderOutsideMessage is outsideMessage for a failure without a position.
const loaderOutsideMessage = "a file the compose files use is outside the workspace (after links): sbf loads and " +
	"ships only files inside it, through relative links"

// absolutePath finds the absolute paths an error names (Unix or Windows).
var absolutePath = lazyre.New(`(?:^|[\s'"(=\x60])((?:[A-Za-z]:)?[/\\][^\s'"\x60,;()\[\]{}<>]*)`)

// fileWords mark an error about opening or reading a file.
var fileWords = []string{"no such file", "not found", "permission denied", "not permitted", "couldn't", "could not",
	"cannot", "can't", "failed to read", "is a directory", "not a directory", "not a file", "not a regular file",
	"escapes", "too many levels", "open ", "stat ", "read "}

// loaderError is a loader's failure as sbf reports it. One about a file
// outside the workspace (which the check should have stopped) becomes
// the same words whatever happened there, so nothing about it leaks.
func (l *loading) loaderError(err error) error {
	file := strings.Join(l.files, ", ")
	msg := err.Error()
	lower := strings.ToLower(msg)
	if slices.ContainsFunc(fileWords, func(w string) bool { return strings.Contains(lower, w) }) {
		for _, m := range absolutePath.FindAllStringSubmatch(msg, -1) {
			if !within(l.check.rootDir, m[1]) {
				return &guest.ProjectError{File: file, Err: errors.New(loaderOutsideMessage)}
			}
		}
	}
	return &guest.ProjectError{File: file, Err: err}
}

// within reports whether p is lexically inside dir.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
