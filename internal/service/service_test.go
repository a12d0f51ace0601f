package service

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/sandboxforge/sbf/internal/service/servicetest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixture has what a careless renderer gets wrong: blanks, quotes, a
// backslash, systemd's % and $, and XML's & and <.
func fixture(h Host) Definition {
	d := Definition{
		Description: "sbf reconcile loop (100% of leases)",
		Program:     "/opt/sand box/bin/sbf",
		Args: []string{"serve", "--loop-only", "--workspace", "/home/alice/my proj",
			"--workspace", `/home/alice/it's "quoted" \ $HOME & <b>`, "--log-file", "/var/log/x y.log"},
		Env: []EnvVar{{"PATH", "/opt/sand box/bin:/usr/bin"}, {"SBF_STATE_HOME", "/home/alice/.local/state/sandboxforge"},
			{"SBF_WEIRD", `a "b" \c %h $d`}},
		LogFile: DefaultLogFile(h),
		User:    `EXAMPLE\alice`,
		WorkDir: "/home/alice/.local/state/sandboxforge/100% here",
	}
	if h.OS == "windows" {
		d.Program = `C:\Program Files\sbf\sbf.exe`
		d.Args[3], d.Args[5] = `C:\Users\alice\my proj\`, `C:\Users\alice\say "hi" & <b>`
		d.Args[7] = d.LogFile
		d.Env = nil
		d.WorkDir = `C:\Users\alice\AppData\Local\sandboxforge`
	}
	return d
}

var hosts = []Host{
	{OS: "linux", Home: "/home/alice"},
	{OS: "darwin", Home: "/Users/alice", UID: 501},
	{OS: "windows", Home: `C:\Users\alice`, LocalAppData: `C:\Users\alice\AppData\Local`},
}

func TestGoldenFiles(t *testing.T) {
	for _, h := range hosts {
		m, err := For(h)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(m.Kind(), func(t *testing.T) {
			data, err := m.Render(fixture(h))
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			if m.Kind() == "schtasks" {
				text = decodeUTF16(t, data)
			}
			golden := filepath.Join("testdata", m.Kind()+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if text != string(want) {
				t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", m.Kind(), golden, text)
			}
		})
	}
}

// decodeUTF16 reads the task file as schtasks does: a byte order mark,
// then UTF-16LE with CRLF line ends.
func decodeUTF16(t *testing.T, data []byte) string {
	if len(data) < 2 || data[0] != 0xFF || data[1] != 0xFE || len(data)%2 != 0 {
		t.Fatalf("the task file is not UTF-16LE with a byte order mark: % x", data[:min(len(data), 8)])
	}
	units := make([]uint16, 0, len(data)/2-1)
	for i := 2; i < len(data); i += 2 {
		units = append(units, uint16(data[i])|uint16(data[i+1])<<8)
	}
	text := string(utf16.Decode(units))
	if strings.Count(text, "\n") != strings.Count(text, "\r\n") {
		t.Error("the task file mixes line ends")
	}
	return strings.ReplaceAll(text, "\r\n", "\n")
}

func TestUnitRunsTheDefinition(t *testing.T) {
	h := hosts[0]
	d := fixture(h)
	m, _ := For(h)
	data, err := m.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	argv, env, err := ParseUnit(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]string{d.Program}, d.Args...); !slices.Equal(argv, want) {
		t.Errorf("ExecStart= runs\n%q\nwant\n%q", argv, want)
	}
	// systemd expands specifiers in WorkingDirectory= too: %% is one %.
	want := "\nWorkingDirectory=" + strings.ReplaceAll(d.WorkDir, "%", "%%") + "\n"
	if !bytes.Contains(data, []byte(want)) {
		t.Errorf("the unit does not start in %s:\n%s", d.WorkDir, data)
	}
	if !slices.Equal(env, d.Env) {
		t.Errorf("Environment= sets %q, want %q", env, d.Env)
	}
}

// ParseUnit against the examples of systemd.service(5) and
// systemd.exec(5), so it is not only the inverse of Render's quoting.
func TestParseUnitAsSystemdDoes(t *testing.T) {
	for line, want := range map[string][]string{
		`/bin/echo "one" 'two' "three four"`:  {"/bin/echo", "one", "two", "three four"},
		`/bin/echo a\ b "x\"y" 'it\'s'`:       {"/bin/echo", "a b", `x"y`, "it's"},
		`/bin/echo 100%% $$HOME "" tab\there`: {"/bin/echo", "100%", "$HOME", "", "tab\there"},
	} {
		argv, _, err := ParseUnit([]byte("[Service]\nExecStart=" + line + "\n"))
		if err != nil || !slices.Equal(argv, want) {
			t.Errorf("ExecStart=%s: %q, %v; want %q", line, argv, err, want)
		}
	}
	for _, bad := range []string{`/bin/echo %h`, `/bin/echo $HOME`, `/bin/echo "open`, `/bin/echo \x41`} {
		if argv, _, err := ParseUnit([]byte("[Service]\nExecStart=" + bad + "\n")); err == nil {
			t.Errorf("ExecStart=%s: %q, want an error (systemd would expand or refuse it)", bad, argv)
		}
	}
	_, env, err := ParseUnit([]byte("[Service]\nExecStart=/bin/true\nEnvironment=\"A=b c\" D=e\nEnvironment=F=100%%\n"))
	if err != nil || !slices.Equal(env, []EnvVar{{"A", "b c"}, {"D", "e"}, {"F", "100%"}}) {
		t.Errorf("Environment=: %q, %v", env, err)
	}
}

func TestPlistRunsTheDefinition(t *testing.T) {
	h := hosts[1]
	d := fixture(h)
	m, _ := For(h)
	data, err := m.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	// A plist is key/value pairs in order; walk the tokens to read back
	// ProgramArguments and EnvironmentVariables.
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var strs []string
	var keys []string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok && (se.Name.Local == "string" || se.Name.Local == "key") {
			var s string
			if err := dec.DecodeElement(&s, &se); err != nil {
				t.Fatal(err)
			}
			if se.Name.Local == "key" {
				keys = append(keys, s)
			}
			strs = append(strs, se.Name.Local+":"+s)
		}
	}
	joined := strings.Join(strs, "\n")
	want := []string{"key:ProgramArguments"}
	for _, a := range append([]string{d.Program}, d.Args...) {
		want = append(want, "string:"+a)
	}
	want = append(want, "key:WorkingDirectory", "string:"+d.WorkDir, "key:EnvironmentVariables")
	for _, e := range d.Env {
		want = append(want, "key:"+e.Name, "string:"+e.Value)
	}
	if !strings.Contains(joined, strings.Join(want, "\n")) {
		t.Errorf("the plist does not read back as the definition:\n%s", joined)
	}
	for _, k := range []string{"Label", "RunAtLoad", "KeepAlive", "StandardErrorPath", "AbandonProcessGroup"} {
		if !slices.Contains(keys, k) {
			t.Errorf("the plist has no %s", k)
		}
	}
}

func TestTaskRunsTheDefinition(t *testing.T) {
	h := hosts[2]
	d := fixture(h)
	m, _ := For(h)
	data, err := m.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	var task struct {
		Exec struct{ Command, Arguments string } `xml:"Actions>Exec"`
	}
	if err := xml.Unmarshal([]byte(decodeUTF16(t, data)), &task); err != nil {
		// encoding/xml refuses a UTF-16 declaration over UTF-8 text; drop it.
		text := decodeUTF16(t, data)
		text = text[strings.Index(text, "?>")+2:]
		if err := xml.Unmarshal([]byte(text), &task); err != nil {
			t.Fatal(err)
		}
	}
	if task.Exec.Command != d.Program {
		t.Errorf("Command %q, want %q", task.Exec.Command, d.Program)
	}
	if got := commandLineToArgv(task.Exec.Arguments); !slices.Equal(got, d.Args) {
		t.Errorf("Arguments %s reads back as\n%q\nwant\n%q", task.Exec.Arguments, got, d.Args)
	}
	d.Env = []EnvVar{{"SBF_STATE_HOME", `D:\state`}}
	if _, err := m.Render(d); err == nil {
		t.Error("a task rendered with environment variables it cannot carry")
	}
}

// commandLineToArgv splits as CommandLineToArgvW does for arguments after
// the program: 2n backslashes before a quote are n and the quote toggles
// quoting; 2n+1 are n and a literal quote; other backslashes are literal.
func commandLineToArgv(s string) []string {
	var out []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			n := 0
			for i < len(s) && s[i] == '\\' {
				n, i = n+1, i+1
			}
			if i < len(s) && s[i] == '"' {
				w.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					w.WriteByte('"')
				} else {
					quoted = !quoted
				}
			} else {
				w.WriteString(strings.Repeat(`\`, n))
				i--
			}
			inWord = true
		case c == '"':
			quoted, inWord = !quoted, true
		case (c == ' ' || c == '\t') && !quoted:
			if inWord {
				out, inWord = append(out, w.String()), false
				w.Reset()
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, w.String())
	}
	return out
}

func TestCarried(t *testing.T) {
	for name, want := range map[string]bool{
		"PATH": true, "SBF_STATE_HOME": true, "LIMA_HOME": true, "MCP_HTTP_PORT": true, "XDG_CONFIG_HOME": true,
		"SBF_NOW": false, "SBF_ENABLE_SIM": false, "SBF_SIM_FAULTS": false, "SBF_DEBUG": false,
		"HOME": false, "AWS_SECRET_ACCESS_KEY": false, "DATABASE_PASSWORD": false,
	} {
		if Carried(name) != want {
			t.Errorf("Carried(%s) = %v, want %v", name, !want, want)
		}
	}
}

func TestRejects(t *testing.T) {
	m, _ := For(hosts[0])
	for _, d := range []Definition{
		{Program: "sbf", Args: []string{"serve"}},
		{Program: "/usr/bin/sbf", Args: []string{"serve\n--evil"}},
		{Program: "/usr/bin/sbf", Env: []EnvVar{{"A", "b\nExecStartPre=/bin/evil"}}},
	} {
		if _, err := m.Render(d); err == nil {
			t.Errorf("rendered %+v", d)
		}
	}
	if _, err := For(Host{OS: "plan9"}); err == nil {
		t.Error("a manager for plan9")
	}
}

// systemd's own parser reads the unit without a complaint. It needs only
// the tool, not systemd running: the user mode wants a runtime folder.
func TestSystemdAnalyzeVerify(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := fixture(hosts[0])
	d.Program = exe // verify checks that the program exists
	m, _ := For(hosts[0])
	data, err := m.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	servicetest.VerifyUnit(t, Name+".service", data)
}

// The user unit the .deb and .rpm packages carry (/usr/lib/systemd/user)
// is this renderer's, for the packaged binary and the default state
// folder; `systemctl --user enable --now sbf-serve` starts it, and a unit
// `sbf service install` writes in ~/.config takes its place.
func TestPackagedUnit(t *testing.T) {
	m, _ := For(hosts[0])
	want, err := m.Render(PackagedDefinition())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "packaging", "systemd", Name+".service")
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s is not the rendered unit (go test -update rewrites it): %v\n%s", path, err, want)
	}
}
