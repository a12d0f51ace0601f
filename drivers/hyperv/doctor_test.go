package hyperv

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/hyperv/internal/fakehv"
)

func checks(d drivers.Diagnosis) map[string]drivers.Check {
	out := map[string]drivers.Check{}
	for _, c := range d.Checks {
		out[c.Name] = c
	}
	return out
}

// What `sbf doctor` says here: Hyper-V needs Windows, and what to do.
func TestDiagnoseOnLinux(t *testing.T) {
	reg, ok := drivers.Lookup(Name)
	if !ok || reg.Diagnose == nil {
		t.Fatal("hyperv registers no Diagnose")
	}
	env := drivers.Env{Getenv: func(string) string { return "" }, HostOS: "linux", HostArch: "amd64",
		StateDir: t.TempDir()}
	diag := reg.Diagnose(context.Background(), env, []drivers.Spec{spec("sbf-0123abcd-api")})
	host := checks(diag)["host"]
	if diag.Usable || !strings.Contains(diag.Summary, "needs Windows") || host.Status != drivers.CheckFail ||
		len(host.NextSteps) < 2 || !strings.Contains(strings.Join(host.NextSteps, " "), `driver = "lima"`) {
		t.Errorf("diagnosis on Linux = %+v", diag)
	}
	if _, err := reg.New(context.Background(), env); cause(err) != "unsupported_host_os" {
		t.Errorf("New on Linux: %v", err)
	}
}

func TestDiagnoseOnWindows(t *testing.T) {
	f := newFake(t)
	o := f.options()
	diag := Diagnose(context.Background(), o, []drivers.Spec{spec("sbf-0123abcd-api")})
	if !diag.Usable || diag.Summary != "usable" {
		t.Errorf("a healthy host: %+v", diag)
	}
	if c := checks(diag)["powershell"]; !strings.Contains(c.Detail,
		"PowerShell 5.1.22621.4391 (Desktop) at "+fakePowerShell) {
		t.Errorf("powershell check = %+v", c)
	}

	w := fakehv.Healthy()
	w.Probe.Switches = []string{"External", "Internal"}
	f.save(w)
	o.BaseVHDX, o.SSHKey = filepath.Join(t.TempDir(), "none.vhdx"), ""
	o.Getenv = func(string) string { return "" }
	diag = Diagnose(context.Background(), o, []drivers.Spec{spec("sbf-0123abcd-api")})
	got := checks(diag)
	if diag.Usable || got["switch"].Status != drivers.CheckFail ||
		!strings.Contains(got["switch"].NextSteps[0], "one of: External, Internal") {
		t.Errorf("a missing switch: %+v", got["switch"])
	}
	if got["base image"].Status != drivers.CheckFail || got["ssh key"].Status != drivers.CheckFail {
		t.Errorf("every problem is reported, not only the first: %+v", diag.Checks)
	}
	w.Probe.Elevated = false
	f.save(w)
	got = checks(Diagnose(context.Background(), f.options(), nil))
	if got["hyper-v"].Status != drivers.CheckFail ||
		!strings.Contains(strings.Join(got["hyper-v"].NextSteps, " "), "S-1-5-32-578") {
		t.Errorf("not elevated: %+v", got["hyper-v"])
	}
}

func TestOptionsFromEnv(t *testing.T) {
	env := func(vars map[string]string) drivers.Env {
		return drivers.Env{Getenv: func(k string) string { return vars[k] }, HostOS: "windows", StateDir: `C:\state`}
	}
	o, err := optionsFrom(env(map[string]string{"HYPERV_SSH_PORT": "2222", "HYPERV_BOOT_TIMEOUT_SECONDS": "3",
		"HYPERV_SWITCH_NAME": "sbf", "USERPROFILE": `C:\Users\me`}))
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(o)
	if d.opts.SSHPort != "2222" || d.opts.BootTimeout != 10*time.Second || d.opts.Switch != "sbf" ||
		d.opts.SSHUser != "ubuntu" ||
		d.opts.StorageDir != filepath.Join(`C:\state`, "hyperv") || !strings.HasSuffix(d.opts.SSHKey, "id_ed25519") {
		t.Errorf("options = %+v", d.opts)
	}
	for _, bad := range []map[string]string{{"HYPERV_SSH_PORT": "ssh"}, {"HYPERV_SSH_PORT": "70000"},
		{"HYPERV_BOOT_TIMEOUT_SECONDS": "3m"}} {
		if _, err := optionsFrom(env(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
