package hyperv

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/hyperv/internal/fakehv"
)

func TestAvailability(t *testing.T) {
	f := newFake(t)
	o := f.options()
	o.HostOS = "linux"
	if _, err := New(context.Background(), o); cause(err) != "unsupported_host_os" ||
		!strings.Contains(err.Error(), "needs Windows") {
		t.Errorf("on Linux: %v", err)
	}
	if calls := f.calls(); len(calls) != 0 {
		t.Errorf("PowerShell was run on a host without Hyper-V: %v", calls)
	}
	o = f.options()
	o.PowerShell, o.Getenv = "", func(k string) string { return map[string]string{"PATH": t.TempDir()}[k] }
	if _, err := New(context.Background(), o); cause(err) != "backend_binary_missing" {
		t.Errorf("without PowerShell: %v", err)
	}
	o.Getenv = func(k string) string { return map[string]string{"PATH": filepath.Dir(fakePowerShell)}[k] }
	if d, err := New(context.Background(), o); err != nil || d.powershell != fakePowerShell {
		t.Errorf("PowerShell on PATH: %v", err)
	}
	for _, tc := range []struct {
		change func(*fakehv.World)
		cause  string
	}{
		{func(w *fakehv.World) { w.Probe.HyperV = false }, "hyperv_unavailable"},
		{func(w *fakehv.World) { w.Probe.Elevated = false }, "hyperv_permission_denied"},
	} {
		w := fakehv.Healthy()
		tc.change(&w)
		f.save(w)
		if _, err := New(context.Background(), f.options()); cause(err) != tc.cause {
			t.Errorf("want %s: %v", tc.cause, err)
		}
	}
	f.reply("probe", "", "The term 'Get-Command' is not recognized", 1)
	if _, err := New(context.Background(), f.options()); cause(err) != "backend_binary_not_executable" {
		t.Errorf("a PowerShell that fails: %v", err)
	}
}

// A missing base image or key stops creating and exec, not listing and
// deleting (an expired lease must still be cleaned up).
func TestMissingImageOrKeyStopsOnlyWhatNeedsThem(t *testing.T) {
	f := newFake(t)
	o := f.options()
	o.BaseVHDX, o.SSHKey = filepath.Join(t.TempDir(), "gone.vhdx"), filepath.Join(t.TempDir(), "id_ed25519")
	d, err := New(context.Background(), o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := context.Background()
	if err := d.Create(ctx, spec("sbf-0123abcd-api")); cause(err) != "hyperv_prerequisites_missing" {
		t.Errorf("Create without the base image: %v", err)
	}
	if _, err := d.List(ctx); err != nil {
		t.Errorf("List: %v", err)
	}
	f.driver().Create(ctx, spec("sbf-0123abcd-api"))
	if err := d.Delete(ctx, "sbf-0123abcd-api"); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if _, err := d.sshTarget(ctx, "sbf-0123abcd-api"); cause(err) != "ssh_key_missing" {
		t.Errorf("exec without the key: %v", err)
	}
}

const listedVM1 = `{"Name":"sbf-0123abcd-api","State":"Running","Notes":"{\"managed_by\":\"sbf\",` +
	`\"instance\":\"sbf-0123abcd-api\",\"workspace\":\"0123abcd\",\"sandbox\":\"api\",` +
	`\"disk\":\"C:\\\\d\\\\a.vhdx\"}","CPUs":2,"MemoryBytes":4294967296,"DiskBytes":32212254720,` +
	`"IPv4":["172.20.1.5"]}`
const listedVM2 = `{"Name":"sbf-0123abcd-db","State":"Off","Notes":"{\"managed_by\":\"sbf\",` +
	`\"instance\":\"sbf-0123abcd-db\",\"workspace\":\"0123abcd\",\"sandbox\":\"db\",` +
	`\"disk\":\"C:\\\\d\\\\b.vhdx\"}","CPUs":1,"MemoryBytes":2147483648,"DiskBytes":-1,"IPv4":null}`

// ConvertTo-Json's shapes for one VM, several, none, and Windows
// PowerShell's wrapped arrays, through a real process.
func TestListParsesEveryShape(t *testing.T) {
	f := newFake(t)
	d := f.driver()
	for name, tc := range map[string]struct {
		out   string
		names []string
	}{
		"one object":        {listedVM1, []string{"sbf-0123abcd-api"}},
		"array":             {"[" + listedVM1 + "," + listedVM2 + "]", []string{"sbf-0123abcd-api", "sbf-0123abcd-db"}},
		"nothing":           {"", nil},
		"empty array":       {"[]\r\n", nil},
		"5.1 wrapped array": {`{"value":[` + listedVM2 + `],"Count":1}`, []string{"sbf-0123abcd-db"}},
	} {
		f.reply("list", tc.out, "", 0)
		insts, err := d.List(context.Background())
		var names []string
		for _, i := range insts {
			names = append(names, i.Name)
		}
		if err != nil || !slices.Equal(names, tc.names) {
			t.Errorf("%s: %v, %v", name, names, err)
		}
	}
	f.reply("list", "["+listedVM1+","+listedVM2+"]", "", 0)
	insts, _ := d.List(context.Background())
	api, db := insts[0], insts[1]
	if api.Status != drivers.Running || api.SSH != "172.20.1.5:"+f.guest.Port || api.Reported.CPUs != 2 ||
		api.Reported.MemoryGiB != 4 || api.Reported.DiskGiB != 30 {
		t.Errorf("api = %+v", api)
	}
	if db.Status != drivers.Broken || db.SSH != "" {
		t.Errorf("db, whose disk is gone = %+v", db)
	}
	f.reply("list", "[{\"Name\": oops}]", "", 0)
	if _, err := d.List(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "parsing the Hyper-V VM list") {
		t.Errorf("malformed JSON: %v", err)
	}
}

func TestListKeepsOnlyMarkersForTheirOwnName(t *testing.T) {
	f := newFake(t)
	d := f.driver()
	api := strings.Replace(listedVM1, `"Name":"sbf-0123abcd-api"`, `"Name":"sbf-0123abcd-copy"`, 1)
	f.reply("list", "["+api+"]", "", 0)
	if insts, err := d.List(context.Background()); err != nil || len(insts) != 0 {
		t.Errorf("a VM carrying another VM's marker was listed: %v %v", insts, err)
	}
}

func TestStatusOfEveryState(t *testing.T) {
	for state, want := range map[string]drivers.Status{
		"Running": drivers.Running, "Starting": drivers.Running, "Off": drivers.Stopped, "Saved": drivers.Stopped,
		"Paused": drivers.Stopped, "Stopping": drivers.Stopped, "Hibernated": drivers.Stopped,
		"ForceReboot": drivers.Running,
		"OffCritical": drivers.Broken, "RunningCritical": drivers.Broken, "Other": drivers.Broken,
	} {
		if got := status(state); got != want {
			t.Errorf("%s: %s, want %s", state, got, want)
		}
	}
}

func TestTimeoutKillsPowerShell(t *testing.T) {
	f := newFake(t)
	d := f.driver()
	d.opts.CommandTimeout = 300 * time.Millisecond
	os.WriteFile(filepath.Join(f.dir, "list.sleep"), []byte("20s"), 0o644)
	start := time.Now()
	_, err := d.List(context.Background())
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Timeout == 0 || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Errorf("a hung PowerShell: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the timeout took %s to end it", took)
	}
}

func TestErrorsSayWhatPowerShellSaid(t *testing.T) {
	f := newFake(t)
	d := f.driver()
	d.opts.Switch = "External"
	err := d.Create(context.Background(), spec("sbf-0123abcd-api"))
	if err == nil || !strings.Contains(err.Error(), `unable to find a virtual switch with name "External"`) ||
		strings.Contains(err.Error(), "At line") ||
		!strings.Contains(err.Error(), "creating Hyper-V VM sbf-0123abcd-api") {
		t.Errorf("create on a missing switch: %v", err)
	}
	d.opts.Switch = "Default Switch"
	s := spec("sbf-0123abcd-api")
	s.DiskGiB = 4
	if err := d.Create(context.Background(), s); err == nil ||
		!strings.Contains(err.Error(), "disk_gib is smaller than the base image") {
		t.Errorf("a disk smaller than the base: %v", err)
	}
	if len(f.world().VMs) != 0 {
		t.Errorf("failed creates left VMs: %+v", f.world().VMs)
	}
}

func TestCreateMakesWhatV1Made(t *testing.T) {
	f := newFake(t)
	d := f.driver()
	s := spec("sbf-0123abcd-api")
	if err := d.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	vm := f.world().VMs[0]
	disk := filepath.Join(f.dir, "disks", s.Name+".vhdx")
	if vm.Generation != 2 || vm.CPUs != 2 || vm.MemoryBytes != 2*gibBytes || vm.State != "Off" ||
		vm.Switch != "Default Switch" ||
		!slices.Equal(vm.Disks, []string{disk}) || vm.Notes != mustMarker(t, s.Name, disk) {
		t.Errorf("vm = %+v", vm)
	}
	if size, err := fakehv.VHDSize(disk); err != nil || size != 10*gibBytes {
		t.Errorf("disk %d, %v; want 10 GiB", size, err)
	}
	if err := d.Delete(context.Background(), s.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(disk); !errors.Is(err, os.ErrNotExist) || len(f.world().VMs) != 0 {
		t.Errorf("after Delete: disk %v, VMs %v", err, f.world().VMs)
	}
}

func TestReconfigureRefusals(t *testing.T) {
	f := newFake(t)
	d := f.driver()
	ctx := context.Background()
	s := spec("sbf-0123abcd-api")
	d.Create(ctx, s)
	d.Start(ctx, s)
	if err := d.Reconfigure(ctx, s); err == nil || !strings.Contains(err.Error(), "must be stopped") {
		t.Errorf("reconfigure of a running VM: %v", err)
	}
	d.Stop(ctx, s.Name)
	smaller := s
	smaller.DiskGiB = 9
	if err := d.Reconfigure(ctx, smaller); err == nil || !strings.Contains(err.Error(), "disk_gib") {
		t.Errorf("a shrinking disk: %v", err)
	}
	if err := d.Reconfigure(ctx, drivers.Spec{Name: "sbf-0123abcd-gone", CPUs: 1, MemoryGiB: 1,
		DiskGiB: 1}); !errors.Is(err, drivers.ErrNotFound) {
		t.Errorf("reconfigure of a missing VM: %v", err)
	}
}

func TestBootWaitsForAnAddressAndSSH(t *testing.T) {
	f := newFake(t)
	w := fakehv.Healthy()
	w.BootPolls = 3
	f.save(w)
	d := f.driver()
	ctx := context.Background()
	s := spec("sbf-0123abcd-api")
	d.Create(ctx, s)
	var progress []string
	if err := d.Start(drivers.WithProgress(ctx, func(m string) { progress = append(progress, m) }), s); err != nil {
		t.Fatal(err)
	}
	ips := 0
	for _, c := range f.calls() {
		if c.Op == "ip" {
			ips++
		}
	}
	if ips != 4 || len(progress) != 1 || !strings.Contains(progress[0], "IPv4 address") {
		t.Errorf("%d address queries (want 4), progress %q", ips, progress)
	}
	d.Stop(ctx, s.Name)
	w = f.world()
	w.BootPolls = 1 << 20
	f.save(w)
	d.opts.BootTimeout = 50 * time.Millisecond
	if err := d.Start(ctx, s); err == nil || !strings.Contains(err.Error(), "hv_kvp_daemon") {
		t.Errorf("a guest that never reports an address: %v", err)
	}
}

func TestExecAndCopyOverSSH(t *testing.T) {
	f := newFake(t)
	d := f.driver()
	ctx := context.Background()
	s := spec("sbf-0123abcd-api")
	d.Create(ctx, s)
	if err := d.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
	res, err := d.Exec(ctx, s.Name, drivers.ExecRequest{Command: "echo hello; exit 7"})
	if err != nil || res.ExitCode != 7 || res.Stdout != "hello\n" || !strings.HasPrefix(res.Via, "ssh") {
		t.Errorf("exec: %+v %v", res, err)
	}
	src := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(src, []byte("data"), 0o644)
	dst := filepath.Join(t.TempDir(), "copied.txt")
	if err := d.CopyIn(ctx, s.Name, src, dst); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(dst); string(data) != "data" {
		t.Errorf("copied %q", data)
	}
	var archive bytes.Buffer
	if err := d.GetArchive(ctx, s.Name, dst, &archive); err != nil || archive.Len() == 0 {
		t.Errorf("GetArchive: %d bytes, %v", archive.Len(), err)
	}
	d.Stop(ctx, s.Name)
	if _, err := d.Exec(ctx, s.Name, drivers.ExecRequest{Command: "true"}); err == nil ||
		!strings.Contains(err.Error(), "not running") {
		t.Errorf("exec in a stopped VM: %v", err)
	}
}
