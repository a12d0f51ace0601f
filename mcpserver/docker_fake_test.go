package mcpserver

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fakeDocker is a docker, df and sudo first on PATH (the sim runs guest
// commands on this host). docker records every call's arguments and
// answers by the first rule whose sh case pattern matches them; df reports
// the free KiB set; sudo always fails, so the runtime probe never reaches
// a real docker.
type fakeDocker struct {
	t       *testing.T
	dir     string
	FreeKiB int64
	// EchoEnv makes every unmatched docker call print its environment, as
	// a command echoing what it was given would.
	EchoEnv bool
}

// dockerRule answers the docker calls whose arguments ("$*") match the
// pattern.
type dockerRule struct {
	pattern        string
	stdout, stderr string
	code           int
	echoEnv        bool // print the environment first
}

func newFakeDocker(t *testing.T) *fakeDocker {
	f := &fakeDocker{t: t, dir: t.TempDir(), FreeKiB: 50 << 20}
	f.write(filepath.Join(f.dir, "sudo"), "#!/bin/sh\nexit 1\n")
	f.set()
	t.Setenv("PATH", f.dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return f
}

func (f *fakeDocker) write(path, script string) {
	f.t.Helper()
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		f.t.Fatal(err)
	}
}

// set replaces the rules.
func (f *fakeDocker) set(rules ...dockerRule) {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n{ for a in \"$@\"; do printf '%s\\037' \"$a\"; done; printf '\\n'; } >> " +
		sq(f.log()) + "\ncase \"$*\" in\n")
	for _, r := range rules {
		b.WriteString(r.pattern + ") ")
		if r.echoEnv {
			b.WriteString("env; ")
		}
		b.WriteString("printf %s " + sq(r.stdout) + "; printf %s " + sq(r.stderr) + " >&2; exit " +
			strconv.Itoa(r.code) + ";;\n")
	}
	if f.EchoEnv {
		b.WriteString("*) env;;\n")
	}
	b.WriteString("esac\nexit 0\n")
	f.write(filepath.Join(f.dir, "docker"), b.String())
	f.write(filepath.Join(f.dir, "df"), "#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"+
		"echo '/dev/vda1 100000000 1 "+strconv.FormatInt(f.FreeKiB, 10)+" 1% /'\n")
}

func (f *fakeDocker) log() string { return filepath.Join(f.dir, "calls") }

// calls are the docker argvs so far, the runtime probe's left out.
func (f *fakeDocker) calls() [][]string {
	data, _ := os.ReadFile(f.log())
	var out [][]string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		argv := strings.Split(strings.TrimSuffix(line, "\x1f"), "\x1f")
		if line == "" || argv[0] == "version" || len(argv) > 1 && argv[0] == "compose" && argv[1] == "version" {
			continue
		}
		out = append(out, argv)
	}
	return out
}

// last is the last docker argv, joined with spaces.
func (f *fakeDocker) last() string {
	c := f.calls()
	if len(c) == 0 {
		return ""
	}
	return strings.Join(c[len(c)-1], " ")
}

// ran says whether some docker argv, joined with spaces, was this.
func (f *fakeDocker) ran(argv string) bool {
	return slices.ContainsFunc(f.calls(), func(c []string) bool { return strings.Join(c, " ") == argv })
}

func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
