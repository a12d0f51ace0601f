package hyperv

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/hyperv/internal/psscript"
)

const gibBytes = 1 << 30

var update = flag.Bool("update", false, "rewrite the golden PowerShell scripts")

// goldenDriver has the settings of a typical Windows host.
func goldenDriver() *Driver {
	return newDriver(Options{HostOS: "windows", HostArch: "amd64", Getenv: func(string) string { return "" },
		BaseVHDX: `C:\images\ubuntu-24.04.vhdx`, StorageDir: `C:\ProgramData\sbf\hyperv`})
}

// goldenScripts is every script the driver runs, as it runs them.
func goldenScripts(t *testing.T) map[string]script {
	d := goldenDriver()
	s := drivers.Spec{Name: "sbf-0123abcd-api", CPUs: 2, MemoryGiB: 4, DiskGiB: 30, Arch: "x86_64"}
	create, err := d.createScript(s)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]script{
		"probe": {op: "probe"}, "list": listScript(), "create": create,
		"start": d.ownedScript("start", s.Name), "ip": d.ownedScript("ip", s.Name),
		"stop": d.ownedScript("stop", s.Name), "delete": d.ownedScript("delete", s.Name),
		"reconfigure": d.ownedScript("reconfigure", s.Name, resources(s)...),
	}
}

func TestGoldenScripts(t *testing.T) {
	for op, sc := range goldenScripts(t) {
		got, err := sc.render()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "golden", op+".ps1")
		if *update {
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, []byte(got), 0o644)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if got != string(want) {
			t.Errorf("%s script differs from %s (-update rewrites it):\n%s", op, path, got)
		}
	}
}

var (
	reads   = regexp.MustCompile(`\$([A-Za-z_]\w*)`)
	assigns = regexp.MustCompile(`\$([A-Za-z_]\w*)\s*=[^=]`)
	// What PowerShell itself defines.
	automatic = map[string]bool{"_": true, "null": true, "true": true, "false": true, "psversiontable": true}
)

// PowerShell's variable names ignore case, so a body that assigns `$disk`
// overwrites the parameter `$Disk`; and a body reading a parameter the
// driver does not pass reads $null. Both are checked for every script.
func TestBodiesUseOnlyTheirParameters(t *testing.T) {
	for op, sc := range goldenScripts(t) {
		text, _ := sc.render()
		parsed, err := psscript.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		params, locals := map[string]bool{}, map[string]bool{}
		for name := range parsed.Params {
			params[strings.ToLower(name)] = true
		}
		for _, m := range assigns.FindAllStringSubmatch(parsed.Body, -1) {
			name := strings.ToLower(m[1])
			if params[name] {
				t.Errorf("%s: the body assigns $%s, overwriting the parameter", op, m[1])
			}
			locals[name] = true
		}
		for _, m := range reads.FindAllStringSubmatch(parsed.Body, -1) {
			name := strings.ToLower(m[1])
			if !params[name] && !locals[name] && !automatic[name] {
				t.Errorf("%s: the body reads $%s, which is neither a parameter nor assigned", op, m[1])
			}
		}
	}
}

// hostile are values PowerShell would read as code, or cut short, if
// quoting were wrong.
var hostile = []string{
	`C:\Users\O'Brien\disks`, `it''s`, `'`, `''`, `'; Remove-Item -Recurse C:\ ; '`,
	`$env:USERPROFILE\$(whoami)`, "back`tick`n", `"double" quotes`, `with spaces  and	tabs`,
	"new\nline", `D:\Hyper-V\Ünïcødé 仮想マシン\🚀.vhdx`, "left‘ right’ low‚ reversed‛",
	"‘’", "’'", `\\server\share\base.vhdx`, `@(1,2)`, `# not a comment`, "",
}

// quoted renders one parameter with quoter and reads it back as
// PowerShell would.
func roundTrip(quoter func(string) string, value string) (string, error) {
	text := psscript.Header + "t\n" + psscript.Begin + "$V = " + quoter(value) + "\n" + psscript.End
	parsed, err := psscript.Parse(text)
	if err != nil {
		return "", err
	}
	got, _ := parsed.Params["V"].(string)
	return got, nil
}

func TestQuotingRoundTrips(t *testing.T) {
	for _, v := range hostile {
		if got, err := roundTrip(quote, v); err != nil || got != v {
			t.Errorf("quote(%q) reads back as %q (%v)", v, got, err)
		}
	}
	d := goldenDriver()
	d.opts.StorageDir, d.opts.Switch = hostile[0], hostile[3]
	for _, v := range hostile {
		s := drivers.Spec{Name: "sbf-0123abcd-api", CPUs: 1, MemoryGiB: 2, DiskGiB: 10,
			Image: drivers.Image{Location: v}}
		sc, err := d.createScript(s)
		if err != nil {
			t.Fatal(err)
		}
		text, err := sc.render()
		if v == "" || err != nil {
			continue
		}
		parsed, err := psscript.Parse(text)
		if err != nil {
			t.Fatalf("the create script with base %q does not parse: %v", v, err)
		}
		want := map[string]any{"Name": s.Name, "Base": v, "Storage": hostile[0], "Disk": d.diskPath(s.Name),
			"Switch": hostile[3], "Notes": mustMarker(t, s.Name, d.diskPath(s.Name)), "CPUs": int64(1),
			"MemoryBytes": int64(2 * gibBytes), "DiskBytes": int64(10 * gibBytes)}
		if !reflect.DeepEqual(parsed.Params, want) {
			t.Errorf("base %q: PowerShell would get\n%v\nwant\n%v", v, parsed.Params, want)
		}
	}
	if _, err := (script{op: "list", params: []param{{"Prefix", "a\x00b"}}}).render(); err == nil {
		t.Error("a NUL, which no command line carries, was rendered")
	}
}

func mustMarker(t *testing.T, name, disk string) string {
	m, err := newMarker(name, disk)
	if err != nil {
		t.Fatal(err)
	}
	return m.String()
}

// The round trip is what catches quoting bugs: each of these broken
// quoters is one it must reject.
func TestRoundTripCatchesBrokenQuoting(t *testing.T) {
	broken := map[string]func(string) string{
		"no doubling":       func(s string) string { return "'" + s + "'" },
		"only ASCII quotes": func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" },
		"double quotes":     func(s string) string { return `"` + strings.ReplaceAll(s, `"`, "`\"") + `"` },
		"backslash escapes": func(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" },
	}
	for name, q := range broken {
		caught := false
		for _, v := range hostile {
			if got, err := roundTrip(q, v); err != nil || got != v {
				caught = true
				break
			}
		}
		if !caught {
			t.Errorf("quoting with %s round-trips every hostile value; the check would miss that bug", name)
		}
	}
}

func TestMarker(t *testing.T) {
	m := mustMarker(t, "sbf-0123abcd-api", `C:\disks\sbf-0123abcd-api.vhdx`)
	if want := `{"managed_by":"sbf","instance":"sbf-0123abcd-api","workspace":"0123abcd","sandbox":"api",` +
		`"disk":"C:\\disks\\sbf-0123abcd-api.vhdx"}`; m != want {
		t.Errorf("marker = %s\nwant %s", m, want)
	}
	if _, ok := parseMarker(m, "sbf-0123abcd-api"); !ok {
		t.Error("sbf's own marker is not recognised")
	}
	for notes, name := range map[string]string{
		m:                     "sbf-0123abcd-web", // copied from another VM
		"":                    "sbf-0123abcd-api",
		"my notes":            "sbf-0123abcd-api",
		m[:len(m)-2]:          "sbf-0123abcd-api", // truncated
		ownerPrefix("x") + "": "x",
	} {
		if _, ok := parseMarker(notes, name); ok {
			t.Errorf("Notes %q taken as sbf's marker for %s", notes, name)
		}
	}
	if _, err := newMarker("default", "x"); err == nil {
		t.Error("a marker for a name sbf does not make")
	}
}
