package lima

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/images"
)

func statusOf(d drivers.Diagnosis, name string) string {
	for _, c := range d.Checks {
		if c.Name == name {
			return c.Status
		}
	}
	return "missing"
}

// On a host like this project's CI machine (no usable KVM, an image sbf
// built), Lima is usable via software emulation.
func TestDiagnoseUsableViaEmulation(t *testing.T) {
	withKVM(t, filepath.Join(t.TempDir(), "kvm"))
	f := newFake(t)
	bin := t.TempDir()
	fakeQEMU(t, bin, "echo 'QEMU emulator version 7.2.22'")
	os.WriteFile(filepath.Join(bin, "qemu-img"), []byte("#!/bin/sh\n"), 0o755)
	f.env["PATH"] = bin
	o := f.options()
	o.Image = func(name, arch string) (images.Image, error) {
		return images.Image{Name: name, Dir: "/cache/" + name}, nil
	}
	s := qemuSpec
	s.MemoryGiB, s.DiskGiB, s.Image.Location = 0.5, 1, "sbf:debian-12"
	d := Diagnose(context.Background(), o, []drivers.Spec{s})
	if !d.Usable || d.Summary != "usable via software emulation" ||
		statusOf(d, "virtualization") != drivers.CheckWarn ||
		statusOf(d, "image sbf:debian-12") != drivers.CheckOK || statusOf(d, "limactl") != drivers.CheckOK {
		t.Errorf("diagnosis: %+v", d)
	}
	// Root, a missing QEMU and a missing image each fail, all reported at once.
	o.Euid = func() int { return 0 }
	o.Image = cachedImage(func(string) string { return "" }, 1000)
	f.env["PATH"] = t.TempDir()
	d = Diagnose(context.Background(), o, []drivers.Spec{s})
	if d.Usable || statusOf(d, "user") != drivers.CheckFail || statusOf(d, "qemu") != drivers.CheckFail {
		t.Errorf("diagnosis: %+v", d)
	}
	if c := d.Checks[len(d.Checks)-1]; c.Name != "state folder" || c.Status != drivers.CheckOK {
		t.Errorf("last check: %+v", c)
	}
}

// Root guidance names the user sudo came from, else the user made for
// VMs (creating it when missing, as make run does), never another
// person's account (issue 21, item 6).
func TestRootStepsNameAUser(t *testing.T) {
	if s := rootSteps("alice", "/nonexistent"); len(s) != 1 || !contains(s[0], "runuser -u alice") {
		t.Errorf("sudo user: %q", s)
	}
	passwd := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(passwd,
		[]byte("root:x:0:0::/root:/bin/bash\nsvc:x:1001:1001::/:/usr/sbin/nologin\n"+
			"bob:x:1002:1002::/home/bob:/bin/bash\n"), 0o644)
	s := rootSteps("", passwd)
	if len(s) != 3 || !contains(s[0], "useradd --create-home --home-dir /var/lib/sbf") ||
		!contains(s[2], "runuser -u sbf") || contains(strings.Join(s, "\n"), "bob") {
		t.Errorf("a host with a person's account: %q", s)
	}
	os.WriteFile(passwd, []byte("root:x:0:0::/root:/bin/bash\nsbf:x:1003:1003::/var/lib/sbf:/bin/bash\n"), 0o644)
	if s := rootSteps("root", passwd); len(s) != 2 || contains(s[0], "useradd") || !contains(s[1], "runuser -u sbf") {
		t.Errorf("the VM user exists: %q", s)
	}
}

// As root without limactl, the first thing said is that limactl is not
// installed (the root steps follow); 'make lima' is named only when sbf
// runs from its source tree.
func TestMissingLimactlIsSaidFirst(t *testing.T) {
	f := newFake(t)
	o := f.options()
	o.Euid = func() int { return 0 }
	o.Limactl = filepath.Join(t.TempDir(), "limactl")
	_, err := New(context.Background(), o)
	var u *drivers.UnavailableError
	if !errors.As(err, &u) || u.ProbableCause != "backend_binary_missing" ||
		!contains(u.Reason, "limactl not found") || !contains(u.Reason, "root") ||
		!contains(strings.Join(u.NextSteps, "\n"), "runuser") || contains(err.Error(), " lima'") {
		t.Errorf("root without limactl: %+v", err)
	}
	o.Euid, o.SourceTree = func() int { return 1000 }, "/src/sbf"
	if _, err := New(context.Background(), o); !contains(err.Error(), "'make -C /src/sbf lima'") {
		t.Errorf("from the source tree: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestValidateNamesTheKey(t *testing.T) {
	f := newFake(t)
	f.env["LIMA_TEMPLATES_PATH"] = t.TempDir() // no templates at all
	d := f.driver()
	err := d.Validate(context.Background(), drivers.Spec{Name: "x", VMType: "vz", Mounts: []string{"/a:/b:/c"},
		Ports:    []string{"http"},
		Template: "template:docker"})
	for _, key := range []string{"vm_type:", "mounts:", "ports:", "template:"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("missing %s in %v", key, err)
		}
	}
	var se *drivers.SpecError
	if !errors.As(err, &se) || se.Driver != "lima" {
		t.Errorf("not a SpecError: %v", err)
	}
	ok := drivers.Spec{Name: "x", VMType: "qemu", Image: drivers.Image{Location: "/disk.img"},
		Ports: []string{"8080:80"}}
	if err := d.Validate(context.Background(), ok); err != nil {
		t.Errorf("a valid spec: %v", err)
	}
}

// An image this machine cannot get points at sbf's offline one, and at
// building it only when it is not built (issue 40: "build it once as root"
// for an image already built).
func TestImageHintKnowsTheOfflineImageIsBuilt(t *testing.T) {
	f := newFake(t)
	o := f.options()
	s := qemuSpec
	s.Image.Location = filepath.Join(t.TempDir(), "missing.img")
	steps := func() string {
		d := Diagnose(context.Background(), o, []drivers.Spec{s})
		for _, c := range d.Checks {
			if c.Name == "image "+s.Image.Location {
				if c.Status != drivers.CheckFail {
					t.Errorf("an unreadable image: %+v", c)
				}
				return strings.Join(c.NextSteps, "\n")
			}
		}
		t.Fatalf("no image check in %+v", d)
		return ""
	}
	o.Image = func(name, arch string) (images.Image, error) {
		return images.Image{Name: name, Dir: "/cache/" + name}, nil
	}
	if got := steps(); contains(got, "build it") || !contains(got, `built offline, here in /cache/debian-12: `+
		`[vm.image] location = "sbf:debian-12"`) {
		t.Errorf("built: %q", got)
	}
	empty := t.TempDir() // not the machine's own cache, which may hold it
	o.Image = cachedImage(func(k string) string { return map[string]string{"SBF_IMAGE_CACHE": empty}[k] }, 1000)
	if got := steps(); !contains(got, "build it once as root: sudo sbf image build debian-12") {
		t.Errorf("not built: %q", got)
	}
}
