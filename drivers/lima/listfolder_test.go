package lima

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// folderHome is a Lima home as Lima leaves it: sbf-01234567-api running
// (its pid files naming this test, its host agent answering with port
// 41234), sbf-01234567-db stopped, and a user's instance of their own
// that sbf neither lists nor needs to understand. Each lima.yaml is the
// one sbf writes.
func folderHome(t *testing.T) string {
	home := t.TempDir()
	write := func(name string, s drivers.Spec) string {
		dir := filepath.Join(home, name)
		os.MkdirAll(dir, 0o700)
		data, err := generate(s, []image{{Location: "/var/tmp/sbf-test.img", Arch: "x86_64"}})
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "lima.yaml"), data, 0o644)
		return dir
	}
	api := write("sbf-01234567-api", drivers.Spec{CPUs: 2, MemoryGiB: 2, DiskGiB: 10, VMType: "qemu", Arch: "x86_64"})
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	os.WriteFile(filepath.Join(api, "ha.pid"), pid, 0o644)
	os.WriteFile(filepath.Join(api, "qemu.pid"), pid, 0o644)
	serveHostAgent(t, filepath.Join(api, "ha.sock"), "41234")
	write("sbf-01234567-db", drivers.Spec{CPUs: 1, MemoryGiB: 1.5, DiskGiB: 5})
	mine := filepath.Join(home, "default")
	os.MkdirAll(mine, 0o700)
	os.WriteFile(filepath.Join(mine, "lima.yaml"), []byte("base: template://docker\n"), 0o644)
	return home
}

// fakeAt is the fake limactl with home as its LIMA_HOME.
func fakeAt(t *testing.T, home string) *fake {
	f := newFake(t)
	f.env["LIMA_HOME"] = home
	return f
}

func TestFoldersAreReadAsLimaInspectsThem(t *testing.T) {
	home := folderHome(t)
	f := fakeAt(t, home)
	d := f.driver()
	got, sure := d.readFolders(context.Background(), managedOrLabelled, nil)
	if !sure {
		t.Fatal("a home of running and stopped instances sbf wrote: not sure")
	}
	want := []listedInstance{
		{Name: "sbf-01234567-api", Status: "Running", Dir: filepath.Join(home, "sbf-01234567-api"), VMType: "qemu",
			Arch: "x86_64", CPUs: 2, Memory: 2 << 30, Disk: 10 << 30, SSHLocalPort: 41234, SSHAddress: "127.0.0.1",
			SSHConfigFile: filepath.Join(home, "sbf-01234567-api", "ssh.config")},
		{Name: "sbf-01234567-db", Status: "Stopped", Dir: filepath.Join(home, "sbf-01234567-db"), VMType: "qemu",
			Arch: limaArch("amd64"), CPUs: 1, Memory: 1536 << 20, Disk: 5 << 30, SSHAddress: "127.0.0.1",
			SSHConfigFile: filepath.Join(home, "sbf-01234567-db", "ssh.config")},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read:\n got %+v\nwant %+v", got, want)
	}
	insts, err := d.Inspect(context.Background(), []string{"sbf-01234567-api"})
	if err != nil || len(insts) != 1 || insts[0].Status != drivers.Running || insts[0].SSH != "127.0.0.1:41234" {
		t.Errorf("Inspect: %+v, %v", insts, err)
	}
	if limactlListed(f) {
		t.Errorf("limactl was started: %q", f.argv())
	}
}

// Whatever the folders do not settle is limactl's to answer.
func TestFoldersUnsureAreLeftToLimactl(t *testing.T) {
	cases := map[string]func(home string){
		"an operator's override.yaml": func(home string) {
			os.MkdirAll(filepath.Join(home, "_config"), 0o700)
			os.WriteFile(filepath.Join(home, "_config", "override.yaml"), []byte("cpus: 8\n"), 0o644)
		},
		"a host agent that does not answer": func(home string) {
			os.Remove(filepath.Join(home, "sbf-01234567-api", "ha.sock"))
		},
		"a VM process that is gone": func(home string) {
			os.WriteFile(filepath.Join(home, "sbf-01234567-api", "qemu.pid"), []byte("2147483647\n"), 0o644)
		},
		"a host agent without its VM": func(home string) {
			os.Remove(filepath.Join(home, "sbf-01234567-api", "qemu.pid"))
		},
		"a pid file that is not a number": func(home string) {
			os.WriteFile(filepath.Join(home, "sbf-01234567-db", "ha.pid"), []byte("x\n"), 0o644)
		},
		"a lima.yaml without its cpus": func(home string) {
			os.WriteFile(filepath.Join(home, "sbf-01234567-db", "lima.yaml"),
				[]byte("memory: 1GiB\ndisk: 5GiB\n"), 0o644)
		},
		"a size Lima would not read": func(home string) {
			os.WriteFile(filepath.Join(home, "sbf-01234567-db", "lima.yaml"),
				[]byte("cpus: 1\nmemory: lots\ndisk: 5GiB\nssh:\n  localPort: 0\n"), 0o644)
		},
		"a folder without its lima.yaml": func(home string) {
			os.Remove(filepath.Join(home, "sbf-01234567-db", "lima.yaml"))
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			home := folderHome(t)
			spoil(home)
			f := fakeAt(t, home)
			f.reply("list", `{"name":"sbf-01234567-db","status":"Broken"}`+"\n", "", 0)
			insts, err := f.driver().List(context.Background())
			if err != nil || len(insts) != 1 || insts[0].Status != drivers.Broken || !limactlListed(f) {
				t.Errorf("List: %+v, %v; limactl asked: %v", insts, err, limactlListed(f))
			}
		})
	}
}

// The folders read as the real limactl lists them. make e2e runs this
// as its unprivileged user, with the limactl it built.
func TestFoldersReadAsRealLimactlLists(t *testing.T) {
	limactl := os.Getenv("SBF_TEST_LIMACTL")
	if limactl == "" {
		t.Skip("set SBF_TEST_LIMACTL to a built limactl (make e2e does)")
	}
	home := folderHome(t)
	d := &Driver{opts: Options{Getenv: func(k string) string { return map[string]string{"LIMA_HOME": home}[k] }}}
	ours, sure := d.readFolders(context.Background(), managedOrLabelled, nil)
	if !sure {
		t.Fatal("not sure")
	}
	cmd := exec.Command(limactl, "--tty=false", "list", "--json")
	cmd.Env = []string{"HOME=" + t.TempDir(), "LIMA_HOME=" + home, "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("limactl list --json: %v", err)
	}
	theirs, err := parseList(out)
	if err != nil {
		t.Fatal(err)
	}
	theirs = slices.DeleteFunc(theirs, func(l listedInstance) bool { return !managedOrLabelled(l.Name, nil) })
	if fmt.Sprint(ours) != fmt.Sprint(theirs) {
		t.Errorf("read from the folders:\n%+v\nlimactl list --json:\n%+v", ours, theirs)
	}
}
