package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/confine"
)

func TestDoctorExitsZeroOnlyWhenEveryBackendCanRun(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"),
		"[vm]\ndriver = \"sim\"\n[sandboxes.a]\n[sandboxes.b]\ndriver = \"hyperv\"\n")
	r := sbf(t, nil, "doctor", "-C", dir, "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if r.code != 1 || rep.Usable || len(rep.Drivers) != 2 || rep.Drivers[0].Driver != "hyperv" ||
		rep.Drivers[0].Usable ||
		rep.Drivers[1].Driver != "sim" || !rep.Drivers[1].Usable {
		t.Errorf("exit %d: %+v", r.code, rep)
	}
	if r := sbf(t, nil, "doctor", "-C", dir, "--only", "memory"); r.code != 0 ||
		strings.Contains(r.stdout, "hyperv driver") {
		t.Errorf("--only memory: exit %d: %s", r.code, r.stdout)
	}
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "[vm]\ndriver = \"sim\"\n")
	r = sbf(t, nil, "doctor", "-C", dir)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sim: usable") {
		t.Errorf("exit %d: %s", r.code, r.stdout)
	}
}

// doctor says what confines the compose loader here, and warns (without
// failing) when the kernel enforces less than all of it.
func TestDoctorSaysHowComposeFilesAreConfined(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "[vm]\ndriver = \"sim\"\n")
	r := sbf(t, nil, "doctor", "-C", dir)
	rep := confine.Probe()
	want := "ok  compose-confinement  compose files load in a child with no environment, confined by Landlock ABI"
	if !rep.Full() {
		want = "warn  compose-confinement  compose files load in a child with no environment, " + rep.String()
	}
	if r.code != 0 || !strings.Contains(r.stdout, "host:\n  "+want) {
		t.Errorf("exit %d, want %q in:\n%s", r.code, want, r.stdout)
	}
}

// --all also says whether this host could run the backends the workspace
// does not use; they do not decide the exit status.
func TestDoctorAllReportsTheOtherBackends(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "[vm]\ndriver = \"sim\"\n[sandboxes.a]\n")
	r := sbf(t, nil, "doctor", "-C", dir, "--all", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	others := map[string]bool{}
	for _, d := range rep.Others {
		others[d.Driver] = true
		if d.Driver == "sim" {
			t.Error("the test-only sim is listed among the other backends")
		}
		if !d.Usable && (len(d.Checks) == 0 || d.Summary == "") {
			t.Errorf("%s is unusable without saying why: %+v", d.Driver, d)
		}
	}
	if r.code != 0 || !rep.Usable || !others["lima"] || !others["hyperv"] || !others["vz"] {
		t.Errorf("exit %d: usable %v, others %v", r.code, rep.Usable, others)
	}
}
