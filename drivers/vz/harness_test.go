package vz

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/sshtest"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
	"github.com/sandboxforge/sbf/drivers/vz/supervisor"
	"github.com/sandboxforge/sbf/drivers/vz/supervisor/supervisortest"
	"github.com/sandboxforge/sbf/images"
	"github.com/sandboxforge/sbf/internal/clock"
)

// TestMain doubles as a supervisor process: CommandStarter re-runs the
// test binary with SBF_VZ_TEST_SUPERVISOR=1, and it supervises a fake
// machine in the folder it is given, as sbf vz-run would a real one.
func TestMain(m *testing.M) {
	if os.Getenv("SBF_VZ_TEST_SUPERVISOR") == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		err := supervisor.RunWith(ctx, os.Args[len(os.Args)-1], &supervisortest.Hypervisor{}, clock.Real{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// world is a driver whose machines are fake and whose guests are an
// in-process SSH server on the loopback: the lease file maps each booted
// machine's MAC to 127.0.0.1, and every instance gets the server's key.
type world struct {
	d      *Driver
	hv     *supervisortest.Hypervisor
	guest  *sshtest.Server
	image  images.Image
	leases string

	mu     sync.Mutex
	cancel []context.CancelFunc
	done   []chan error
}

func newWorld(t *testing.T) *world {
	t.Helper()
	base := supervisortest.ShortTempDir(t)
	w := &world{hv: &supervisortest.Hypervisor{}, guest: sshtest.Start(t), image: fakeImage(t),
		leases: filepath.Join(base, "dhcpd_leases")}
	if err := os.WriteFile(w.leases, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{
		Dir: filepath.Join(base, "vz"), HostOS: "darwin", HostArch: "arm64", Getenv: func(string) string { return "" },
		StartSupervisor: w.startSupervisor,
		Image: func(name, arch string) (images.Image, error) {
			if name != "test" {
				return images.Image{}, fmt.Errorf("no sbf image %s", name)
			}
			return w.image, nil
		},
		Recipes: func() (map[string]images.Recipe, error) {
			return map[string]images.Recipe{"test": {Name: "test", Arches: []string{"aarch64"}}}, nil
		},
		Leases: w.leases, SSHPort: w.guest.Port, StopTimeout: 5e9,
		keygen: w.keygen, ready: "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	w.d = d
	t.Cleanup(w.shutdown)
	return w
}

// startSupervisor runs the supervisor in this process and, as bootpd
// would when the guest asks, leases its MAC an address.
func (w *world) startSupervisor(dir string) error {
	c, err := layout.Folder{Base: filepath.Dir(dir), Name: filepath.Base(dir)}.ReadConfig()
	if err != nil {
		return err
	}
	entry := fmt.Sprintf("{\n\tname=%s\n\tip_address=127.0.0.1\n\thw_address=1,%s\n\tlease=0x7fffffff\n}\n",
		filepath.Base(dir), unpadded(c.MAC))
	f, err := os.OpenFile(w.leases, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	f.WriteString(entry)
	f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	w.mu.Lock()
	w.cancel, w.done = append(w.cancel, cancel), append(w.done, done)
	w.mu.Unlock()
	go func() { done <- supervisor.RunWith(ctx, dir, w.hv, clock.Real{}) }()
	return nil
}

func (w *world) shutdown() {
	w.d.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, cancel := range w.cancel {
		cancel()
		<-w.done[i]
	}
	w.cancel, w.done = nil, nil
}

// unpadded spells a MAC as bootpd does: octets without leading zeros.
func unpadded(mac string) string {
	parts := strings.Split(mac, ":")
	for i, p := range parts {
		if p = strings.TrimLeft(p, "0"); p == "" {
			p = "0"
		}
		parts[i] = p
	}
	return strings.Join(parts, ":")
}

// keygen gives every instance the test server's key.
func (w *world) keygen(path, comment string) (string, error) {
	b, err := os.ReadFile(w.guest.KeyFile)
	if err != nil {
		return "", err
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", err
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " " + comment + "\n", nil
}

// fakeImage is an sbf image: a gzip'd kernel (as distributions ship
// arm64 ones), an initrd and a 3 MiB disk with data around a hole.
func fakeImage(t *testing.T) images.Image {
	t.Helper()
	dir := t.TempDir()
	var kernel bytes.Buffer
	zw := gzip.NewWriter(&kernel)
	zw.Write([]byte("ARM64 kernel Image"))
	zw.Close()
	disk := make([]byte, 3*mib)
	copy(disk, "ext4 superblock")
	copy(disk[len(disk)-4:], "tail")
	im := images.Image{Name: "test", Arch: "aarch64", Dir: dir, Kernel: filepath.Join(dir, "vmlinuz"),
		Initrd: filepath.Join(dir, "initrd.img"), Disk: filepath.Join(dir, "disk.ext4"),
		KernelCmdline: "root=/dev/vda rw console=ttyS0"}
	for p, b := range map[string][]byte{im.Kernel: kernel.Bytes(), im.Initrd: []byte("initrd"), im.Disk: disk} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return im
}

func testSpec(sandbox string) drivers.Spec {
	const eightMiB = 0.0078125
	return drivers.Spec{Name: drivers.InstanceName("ws_0123abcd", sandbox), CPUs: 2, MemoryGiB: 1, DiskGiB: eightMiB,
		Arch: "aarch64", VMType: "vz", Template: "template:docker", Emulation: "auto",
		Image: drivers.Image{Location: "sbf:test"}}
}
