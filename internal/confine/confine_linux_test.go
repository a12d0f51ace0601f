package confine

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The child half of these tests: the test binary run again with
// CONFINE_CHILD set does one thing, confined to CONFINE_READ unless
// CONFINE_FREE is set, and prints "ok" or "err: ...".
func TestMain(m *testing.M) {
	if action := os.Getenv("CONFINE_CHILD"); action != "" {
		os.Exit(child(action, os.Getenv("CONFINE_ARG")))
	}
	if action := os.Getenv("LIMITS_CHILD"); action != "" {
		os.Exit(limitsChild(action)) // limits_linux_test.go
	}
	os.Exit(m.Run())
}

func child(action, arg string) int {
	if os.Getenv("CONFINE_FREE") == "" {
		rep, err := Self(Policy{Read: []string{os.Getenv("CONFINE_READ")}})
		if err != nil {
			fmt.Println("confining:", err)
			return 2
		}
		if !rep.Full() {
			fmt.Println("confined less than all:", rep)
			return 2
		}
	}
	if err := act(action, arg); err != nil {
		fmt.Println("err:", err)
	} else {
		fmt.Println("ok")
	}
	return 0
}

func act(action, arg string) error {
	switch action {
	case "read":
		_, err := os.ReadFile(arg)
		return err
	case "list":
		_, err := os.ReadDir(arg)
		return err
	case "write":
		return os.WriteFile(arg, []byte("pwned\n"), 0o644)
	case "truncate":
		f, err := os.OpenFile(arg, os.O_WRONLY|os.O_TRUNC, 0)
		if err == nil {
			f.Close()
		}
		return err
	case "mkdir":
		return os.Mkdir(arg, 0o755)
	case "remove":
		return os.Remove(arg)
	case "exec":
		return exec.Command(arg).Run()
	case "tcp-connect":
		c, err := net.Dial("tcp", arg)
		if err == nil {
			c.Close()
		}
		return err
	case "tcp-bind":
		return tcpBind()
	case "abstract-connect":
		c, err := net.Dial("unix", arg)
		if err == nil {
			c.Close()
		}
		return err
	case "signal-parent":
		return syscall.Kill(os.Getppid(), 0)
	}
	return fmt.Errorf("unknown action %s", action)
}

// tcpBind binds a plain TCP socket: Go listens with Multipath TCP by
// default, which Landlock does not restrict (see the package doc).
func tcpBind() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	return syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
}

type childWorld struct {
	t                  *testing.T
	allowed, outside   string
	tcpAddr, abstracts string
}

func newChildWorld(t *testing.T) *childWorld {
	if abi := kernelABI(); abi < 6 {
		t.Skipf("THIS KERNEL'S LANDLOCK ABI IS %d (6 or newer needed): the confinement tests cannot run here, "+
			"and compose loads only under sbf's path check on such a host", abi)
	}
	base := t.TempDir()
	w := &childWorld{t: t, allowed: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{w.allowed, w.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(w.allowed, "in.txt"), "inside\n")
	write(t, filepath.Join(w.outside, "secret"), "TOKEN=hunter2\n")
	if err := os.Symlink(filepath.Join(w.outside, "secret"), filepath.Join(w.allowed, "link")); err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.allowed, "true"), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.tcpAddr = ln.Addr().String()
	w.abstracts = fmt.Sprintf("@sbf-confine-test-%d-%s", os.Getpid(), filepath.Base(base))
	un, err := net.Listen("unix", w.abstracts)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []net.Listener{ln, un} {
		go acceptAll(l)
		t.Cleanup(func() { l.Close() })
	}
	return w
}

func acceptAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() { io.Copy(io.Discard, c); c.Close() }()
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs the test binary as the child doing action, confined or free.
func (w *childWorld) run(action, arg string, free bool) string {
	w.t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	// GORACE: a race-enabled child otherwise sleeps a second as it exits.
	c.Env = []string{"CONFINE_CHILD=" + action, "CONFINE_ARG=" + arg, "CONFINE_READ=" + w.allowed,
		"GORACE=atexit_sleep_ms=0"}
	if free {
		c.Env = append(c.Env, "CONFINE_FREE=1")
	}
	out, err := c.CombinedOutput()
	if err != nil {
		w.t.Fatalf("child %s %s: %v\n%s", action, arg, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Each action works in a free child (so a refusal is the confinement's),
// and a confined one may only read below its folder.
func TestAConfinedChildOnlyReadsItsFolders(t *testing.T) {
	w := newChildWorld(t)
	in := func(p string) string { return filepath.Join(w.allowed, p) }
	cases := []struct {
		action, arg string
		allowed     bool
	}{
		{"read", in("in.txt"), true},
		{"list", w.allowed, true},
		{"read", filepath.Join(w.outside, "secret"), false},
		{"read", in("link"), false}, // a link inside to a file outside
		{"list", w.outside, false},
		{"read", "/proc/self/environ", false},
		{"read", "/etc/passwd", false},
		{"write", in("new.txt"), false},
		{"write", filepath.Join(w.outside, "new.txt"), false},
		{"truncate", in("in.txt"), false},
		{"mkdir", in("sub"), false},
		{"remove", in("in.txt"), false},
		{"exec", in("true"), false},
		{"exec", "/bin/true", false},
		{"tcp-connect", w.tcpAddr, false},
		{"tcp-bind", "", false},
		{"abstract-connect", w.abstracts, false},
		{"signal-parent", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.action+" "+tc.arg, func(t *testing.T) {
			if got := w.run(tc.action, tc.arg, true); got != "ok" {
				t.Fatalf("unconfined, %s %s failed, so the test proves nothing: %s", tc.action, tc.arg, got)
			}
			restore(t, w)
			got := w.run(tc.action, tc.arg, false)
			if tc.allowed && got != "ok" {
				t.Errorf("confined, %s %s: %s, want ok", tc.action, tc.arg, got)
			}
			if !tc.allowed && !denied(got) {
				t.Errorf("confined, %s %s: %s, want a refusal", tc.action, tc.arg, got)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(w.outside, "secret")); string(b) != "TOKEN=hunter2\n" {
		t.Errorf("the file outside changed: %q", b)
	}
}

// restore undoes what a free child changed, so the confined one meets
// the same world.
func restore(t *testing.T, w *childWorld) {
	t.Helper()
	write(t, filepath.Join(w.allowed, "in.txt"), "inside\n")
	for _, p := range []string{filepath.Join(w.allowed, "new.txt"), filepath.Join(w.outside, "new.txt"),
		filepath.Join(w.allowed, "sub")} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

func denied(out string) bool {
	return strings.HasPrefix(out, "err:") &&
		(strings.Contains(out, "permission denied") || strings.Contains(out, "operation not permitted"))
}

func TestProbeSaysWhatThisKernelEnforces(t *testing.T) {
	rep := Probe()
	abi := kernelABI()
	if abi == 0 {
		if rep.Mechanism != None || rep.Files || !strings.Contains(rep.String(), "unconfined") {
			t.Errorf("without Landlock: %+v %s", rep, rep)
		}
		return
	}
	if rep.Mechanism != Landlock || rep.ABI != abi || !rep.Files || rep.Network != (abi >= 4) ||
		rep.IPC != (abi >= 6) {
		t.Errorf("ABI %d: %+v", abi, rep)
	}
}
