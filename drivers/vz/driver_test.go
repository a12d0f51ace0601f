package vz

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/cloudinit/cloudinittest"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
	"github.com/sandboxforge/sbf/images"
)

func listed(t *testing.T, d *Driver) map[string]drivers.Instance {
	t.Helper()
	list, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]drivers.Instance{}
	for _, i := range list {
		out[i.Name] = i
	}
	return out
}

func TestCreateLaysOutAStoppedInstance(t *testing.T) {
	w := newWorld(t)
	s := testSpec("api")
	if err := w.d.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	f := w.d.folder(s.Name)
	disk, _ := os.ReadFile(f.Path(layout.DiskFile))
	image, _ := os.ReadFile(w.image.Disk)
	if len(disk) != 8*mib || !bytes.Equal(disk[:len(image)], image) ||
		!bytes.Equal(disk[len(image):], make([]byte, 8*mib-len(image))) {
		t.Errorf("disk: %d bytes, image prefix kept: %v", len(disk), bytes.Equal(disk[:len(image)], image))
	}
	if k, _ := os.ReadFile(f.Path(layout.KernelFile)); string(k) != "ARM64 kernel Image" {
		t.Errorf("kernel %q: an arm64 kernel must be decompressed", k)
	}
	if i, _ := os.ReadFile(f.Path(layout.InitrdFile)); string(i) != "initrd" {
		t.Errorf("initrd %q", i)
	}
	seed, _ := os.ReadFile(f.Path(layout.SeedFile))
	_, files := cloudinittest.Read(t, seed)
	pub, _ := w.keygen(t.TempDir()+"/k", "sbf-vz-"+s.Name)
	if !strings.Contains(files["user-data"], strings.TrimSpace(pub)) ||
		!strings.Contains(files["meta-data"], "local-hostname: \"sbf-0123abcd-api\"") {
		t.Errorf("seed: %q", files)
	}
	c, _ := f.ReadConfig()
	if c.CmdLine != "root=/dev/vda rw console=hvc0" || c.CPUs != 2 || c.MemoryBytes != gib || !c.HasInitrd {
		t.Errorf("config %+v", c)
	}
	inst := listed(t, w.d)[s.Name]
	if inst.Status != drivers.Stopped || !reflect.DeepEqual(inst.Reported, s) || inst.Driver != Name {
		t.Errorf("listed %+v", inst)
	}
	if err := w.d.Create(context.Background(), s); err == nil {
		t.Error("a second create of the same instance succeeded")
	}
}

func TestAFailedCreateLeavesNothing(t *testing.T) {
	w := newWorld(t)
	for name, s := range map[string]drivers.Spec{
		"unknown image":    func() drivers.Spec { s := testSpec("a"); s.Image.Location = "sbf:nope"; return s }(),
		"disk below image": func() drivers.Spec { s := testSpec("b"); s.DiskGiB = 0.001; return s }(),
		"digest mismatch": func() drivers.Spec {
			s := testSpec("c")
			s.Image = plainImage(w.image, "sha256:"+strings.Repeat("0", 64))
			return s
		}(),
		"kernel unreadable": func() drivers.Spec {
			s := testSpec("d")
			s.Image = plainImage(w.image, "")
			s.Image.Kernel += ".gone"
			return s
		}(),
		"refused by the spec": func() drivers.Spec { s := testSpec("e"); s.Ports = []string{"8080:80"}; return s }(),
	} {
		if err := w.d.Create(context.Background(), s); err == nil {
			t.Errorf("%s: created", name)
		}
		if w.d.folder(s.Name).Exists() {
			t.Errorf("%s: the folder was left behind", name)
		}
	}
}

func plainImage(im images.Image, digest string) drivers.Image {
	return drivers.Image{Location: im.Disk, Kernel: im.Kernel, Initrd: im.Initrd, Digest: digest}
}

func TestLifecycleThroughTheSupervisor(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	s := testSpec("api")
	if err := w.d.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := w.d.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
	inst := listed(t, w.d)[s.Name]
	if inst.Status != drivers.Running || inst.SSH != "127.0.0.1:"+w.guest.Port {
		t.Errorf("after start: %+v", inst)
	}
	if booted := w.hv.Booted(); len(booted) != 1 ||
		booted[0].Disks[0].Path != w.d.folder(s.Name).Path(layout.DiskFile) {
		t.Errorf("booted %+v", booted)
	}
	res, err := w.d.Exec(ctx, s.Name, drivers.ExecRequest{Command: "echo hello"})
	if err != nil || res.Stdout != "hello\n" || !strings.HasPrefix(res.Via, "ssh") {
		t.Errorf("exec: %+v, %v", res, err)
	}
	if err := w.d.Start(ctx, s); err != nil || len(w.hv.Booted()) != 1 {
		t.Errorf("starting a running instance: %v, %d boots", err, len(w.hv.Booted()))
	}
	if err := w.d.Stop(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if m := w.hv.Last(); m.Requested() != 1 || m.Forced() != 0 {
		t.Errorf("stop: power button %d, forced %d", m.Requested(), m.Forced())
	}
	if inst := listed(t, w.d)[s.Name]; inst.Status != drivers.Stopped || inst.SSH != "" {
		t.Errorf("after stop: %+v", inst)
	}
	if err := w.d.Stop(ctx, s.Name); err != nil {
		t.Errorf("stopping a stopped instance: %v", err)
	}
	if err := w.d.Start(ctx, s); err != nil || len(w.hv.Booted()) != 2 {
		t.Fatalf("restart: %v", err)
	}
	if err := w.d.Delete(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if m := w.hv.Last(); m.Forced() != 1 {
		t.Errorf("delete should stop by force: %d", m.Forced())
	}
	if len(listed(t, w.d)) != 0 || w.d.folder(s.Name).Exists() {
		t.Error("deleted instance still there")
	}
	for _, err := range []error{w.d.Stop(ctx, s.Name), w.d.Delete(ctx, s.Name), w.d.Start(ctx, s)} {
		if !errors.Is(err, drivers.ErrNotFound) {
			t.Errorf("on a missing instance: %v", err)
		}
	}
}

func TestStartReportsWhyTheVMDidNotBoot(t *testing.T) {
	w := newWorld(t)
	s := testSpec("api")
	if err := w.d.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	w.hv.FailBoots(errors.New("VZErrorDomain Code=2: the kernel is not an arm64 Image"))
	err := w.d.Start(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "not an arm64 Image") {
		t.Errorf("start: %v", err)
	}
}

func TestStartGivesUpOnAGuestThatNeverAnswers(t *testing.T) {
	w := newWorld(t)
	w.d.opts.ready, w.d.opts.StartTimeout = "false", 1500e6
	s := testSpec("api")
	if err := w.d.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	panic := []byte("[    1.0] Kernel panic - not syncing: VFS\n")
	os.WriteFile(w.d.folder(s.Name).Path(layout.ConsoleFile), panic, 0o600)
	err := w.d.Start(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "did not answer SSH") ||
		!strings.Contains(err.Error(), "Kernel panic") {
		t.Errorf("start: %v", err)
	}
}

func TestListReportsBrokenFolders(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	done, noDisk := testSpec("done"), testSpec("nodisk")
	for _, s := range []drivers.Spec{done, noDisk} {
		if err := w.d.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(w.d.folder(noDisk.Name).Path(layout.DiskFile))
	half := w.d.folder(testSpec("half").Name)
	os.MkdirAll(half.Dir(), 0o700) // a create that died before its configuration
	os.MkdirAll(w.d.folder("not-sbf").Dir(), 0o700)
	got := listed(t, w.d)
	want := map[string]drivers.Status{
		done.Name:   drivers.Stopped,
		noDisk.Name: drivers.Broken,
		half.Name:   drivers.Broken,
	}
	if len(got) != len(want) {
		t.Errorf("listed %v", got)
	}
	for name, st := range want {
		if got[name].Status != st {
			t.Errorf("%s: %s, want %s", name, got[name].Status, st)
		}
	}
	if err := w.d.Start(ctx, noDisk); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("starting a broken instance: %v", err)
	}
}

func TestReconfigure(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	s := testSpec("api")
	if err := w.d.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	f := w.d.folder(s.Name)
	before, _ := f.ReadConfig()
	s.CPUs, s.MemoryGiB, s.DiskGiB = 4, 2.5, 0.015625 // 16 MiB
	if err := w.d.Reconfigure(ctx, s); err != nil {
		t.Fatal(err)
	}
	c, _ := f.ReadConfig()
	if c.CPUs != 4 || c.MemoryBytes != 2560*mib || c.MAC != before.MAC || c.CmdLine != before.CmdLine ||
		c.Spec.CPUs != 4 {
		t.Errorf("config %+v", c)
	}
	if info, _ := os.Stat(f.Path(layout.DiskFile)); info.Size() != 16*mib {
		t.Errorf("disk %d bytes", info.Size())
	}
	s.DiskGiB = 0.0078125
	if err := w.d.Reconfigure(ctx, s); err == nil {
		t.Error("a disk was shrunk")
	}
	s.DiskGiB = 0.015625
	if err := w.d.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := w.d.Reconfigure(ctx, s); err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("reconfiguring a running instance: %v", err)
	}
}
