package lima

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// ListAll reports what List hides, from the same `limactl list --json`:
// every instance, not only sbf's.
func TestListAllReportsEveryName(t *testing.T) {
	f := newFake(t)
	f.reply("list", ndjson, "", 0)
	d := f.driver()
	all, err := d.ListAll(context.Background())
	if err != nil || len(all) != 3 || f.argv()[1] != "--tty=false list --json" {
		t.Fatalf("ListAll = %v, %v; argv %v", all, err, f.argv())
	}
	def := all[1]
	if def.Name != "default" || def.Driver != Name || def.Status != drivers.Stopped || def.Label != nil ||
		!reflect.DeepEqual(def.Reported, drivers.Spec{Name: "default", CPUs: 4, MemoryGiB: 4, DiskGiB: 100,
			Arch: "aarch64", VMType: "vz"}) {
		t.Errorf("default = %+v", def)
	}
	if all[0].Name != "sbf-01234567-api" || all[0].SSH != "127.0.0.1:41537" || all[2].Status != drivers.Broken {
		t.Errorf("sbf's = %+v, %+v", all[0], all[2])
	}
	f.reply("list", "", `time="x" level=fatal msg="boom"`+"\n", 1)
	if _, err := d.ListAll(context.Background()); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("a failing limactl: %v", err)
	}
	f.reply("list", "{\"name\": oops}\n{}\n", "", 0)
	if _, err := d.ListAll(context.Background()); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("malformed JSON: %v", err)
	}
}

// A v1 VM (agent-…) in a Lima home beside sbf's: ListAll shows it with
// the shape Lima reports, before and after sbf's Claim labels it; List
// shows it only once labelled.
func TestListAllSeesV1VMs(t *testing.T) {
	f := newFake(t)
	home := filepath.Join(f.dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	f.env["LIMA_HOME"] = home
	f.env["PATH"] += string(os.PathListSeparator) + os.Getenv("PATH") // the fake needs sed
	ctx := context.Background()
	d := f.driver()
	v1 := filepath.Join(home, "agent-0a1b2c3d")
	os.Mkdir(v1, 0o755)
	os.WriteFile(filepath.Join(v1, "status"), []byte("Running\n"), 0o644)
	// What `limactl create --cpus=2 --memory=4.0 --disk=30.0 template:docker` leaves, as far as sbf reads it.
	if err := os.WriteFile(filepath.Join(v1, "lima.yaml"),
		[]byte("vmType: qemu\narch: x86_64\ncpus: 2\nmemory: 4GiB\ndisk: 30GiB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sbf := drivers.Spec{Name: "sbf-01234567-api", CPUs: 1, MemoryGiB: 2, DiskGiB: 10, VMType: "qemu", Arch: "x86_64",
		Image: drivers.Image{Location: "/img/disk.img"}}
	if err := d.Create(ctx, sbf); err != nil {
		t.Fatal(err)
	}
	byName := func(list []drivers.Instance) map[string]drivers.Instance {
		m := map[string]drivers.Instance{}
		for _, i := range list {
			m[i.Name] = i
		}
		return m
	}
	all, err := d.ListAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(all)
	agent, ok := got["agent-0a1b2c3d"]
	if len(all) != 2 || !ok || got[sbf.Name].Name == "" {
		t.Fatalf("ListAll = %+v", all)
	}
	want := drivers.Spec{Name: "agent-0a1b2c3d", CPUs: 2, MemoryGiB: 4, DiskGiB: 30, Arch: "x86_64", VMType: "qemu"}
	if agent.Status != drivers.Running || !reflect.DeepEqual(agent.Reported, want) ||
		agent.SSH != "127.0.0.1:60022" || agent.Label != nil {
		t.Errorf("agent = %+v", agent)
	}
	if list, _ := d.List(ctx); len(list) != 1 || list[0].Name != sbf.Name {
		t.Errorf("List = %+v (want only sbf's)", list)
	}

	o := drivers.Owner{WorkspaceID: "ws_0123456789ab", Sandbox: "inst_0a1b2c3d"}
	if err := d.Claim(ctx, "agent-0a1b2c3d", o); err != nil {
		t.Fatal(err)
	}
	all, err = d.ListAll(ctx)
	if l := byName(all)["agent-0a1b2c3d"].Label; err != nil || !l.OwnedBy(o.WorkspaceID, o.Sandbox) {
		t.Errorf("after the claim: label %+v, %v", l, err)
	}
	if list, _ := d.List(ctx); len(list) != 2 {
		t.Errorf("List after the claim = %+v", list)
	}
}
