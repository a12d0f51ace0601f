package vz

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
)

func checks(d drivers.Diagnosis) map[string]drivers.Check {
	out := map[string]drivers.Check{}
	for _, c := range d.Checks {
		out[c.Name] = c
	}
	return out
}

func TestDiagnoseOffMacSaysNeedsMacOS(t *testing.T) {
	d := Diagnose(context.Background(), Options{HostOS: "linux", HostArch: "amd64"}, []drivers.Spec{testSpec("api")})
	host := checks(d)["host"]
	if d.Usable || d.Summary != "needs macOS" || host.Status != drivers.CheckFail ||
		!strings.Contains(host.Detail, "linux/amd64") || len(host.NextSteps) == 0 ||
		!strings.Contains(host.NextSteps[0], "lima") {
		t.Errorf("diagnosis %+v", d)
	}
}

// withFramework pretends this build can call Virtualization.framework.
func withFramework(t *testing.T) {
	old := frameworkMissing
	frameworkMissing = ""
	t.Cleanup(func() { frameworkMissing = old })
}

func TestDiagnoseOnAMac(t *testing.T) {
	withFramework(t)
	w := newWorld(t)
	o := w.d.opts
	o.osVersion = func() (string, error) { return "14.5", nil }
	o.entitlements = func() (string, error) { return "<key>com.apple.security.virtualization</key><true/>", nil }
	bad := testSpec("web")
	bad.Ports = []string{"8080:80"}
	d := Diagnose(context.Background(), o, []drivers.Spec{testSpec("api"), bad})
	c := checks(d)
	if c["macOS"].Status != drivers.CheckOK || c["entitlement"].Status != drivers.CheckOK ||
		c["sandbox api"].Status != drivers.CheckOK ||
		c["instances folder"].Status != drivers.CheckOK {
		t.Errorf("checks %+v", d.Checks)
	}
	if web := c["sandbox web"]; web.Status != drivers.CheckFail || !strings.Contains(web.Detail, "ports") || d.Usable {
		t.Errorf("a spec vz refuses: %+v, usable %v", web, d.Usable)
	}
	d = Diagnose(context.Background(), o, []drivers.Spec{testSpec("api")})
	if !d.Usable || d.Summary != "usable (Virtualization.framework)" {
		t.Errorf("diagnosis %+v", d)
	}
}

func TestDiagnoseAnUnsignedSbfOnAnOldMac(t *testing.T) {
	withFramework(t)
	o := Options{HostOS: "darwin", HostArch: "amd64", Dir: t.TempDir(), Getenv: func(string) string { return "" },
		StartSupervisor: func(string) error { return nil },
		osVersion:       func() (string, error) { return "11.7", nil },
		entitlements:    func() (string, error) { return "", errors.New("code object is not signed at all") }}
	c := checks(Diagnose(context.Background(), o, nil))
	if c["macOS"].Status != drivers.CheckFail || !strings.Contains(c["macOS"].Detail, "12 or newer") {
		t.Errorf("macOS: %+v", c["macOS"])
	}
	if e := c["entitlement"]; e.Status != drivers.CheckFail || !strings.Contains(e.NextSteps[0], "codesign") ||
		!strings.Contains(e.Detail, "not signed") {
		t.Errorf("entitlement: %+v", e)
	}
}

func TestRegisteredEverywhereUnavailableOffMac(t *testing.T) {
	r, ok := drivers.Lookup(Name)
	if !ok {
		t.Fatal("vz is not registered")
	}
	env := drivers.Env{Getenv: func(string) string { return "" }, Clock: clock.Real{}, StateDir: t.TempDir(),
		HostOS: "linux", HostArch: "amd64"}
	_, err := r.New(context.Background(), env)
	var u *drivers.UnavailableError
	if !errors.As(err, &u) || u.ProbableCause != "unsupported_host_os" || !strings.Contains(u.Reason, "needs macOS") ||
		len(u.NextSteps) == 0 {
		t.Errorf("New off macOS: %v", err)
	}
	env.HostOS = "darwin"
	_, err = r.New(context.Background(), env)
	if frameworkMissing != "" && (!errors.As(err, &u) || u.Reason != frameworkMissing) {
		t.Errorf("New on a Mac without the framework: %v", err)
	}
	onWindows := drivers.Env{Getenv: env.Getenv, HostOS: "windows", HostArch: "amd64"}
	if d := r.Diagnose(context.Background(), onWindows, nil); d.Usable {
		t.Error("usable on Windows")
	}
	env.Getenv = func(k string) string { return map[string]string{"SBF_VZ_START_TIMEOUT": "soon"}[k] }
	if _, err := r.New(context.Background(), env); err == nil ||
		!strings.Contains(err.Error(), "SBF_VZ_START_TIMEOUT") {
		t.Errorf("a bad timeout: %v", err)
	}
}

func TestInstancesLiveInTheStateFolderUnlessSaidOtherwise(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		vars     map[string]string
		stateDir string
		want     string
	}{
		{map[string]string{"SBF_VZ_HOME": "/vms", "HOME": "/h"}, "/state", "/vms"},
		{map[string]string{"HOME": "/h"}, "/state", "/state/vz"},
		{map[string]string{"HOME": "/h"}, "", "/h/.sandboxforge/vz"},
	} {
		if got := defaultDir(env(tc.vars), tc.stateDir); got != tc.want {
			t.Errorf("defaultDir(%v, %q) = %q, want %q", tc.vars, tc.stateDir, got, tc.want)
		}
	}
}
