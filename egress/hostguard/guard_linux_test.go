//go:build linux && (amd64 || arm64)

package hostguard

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/internal/clock"
)

// The test binary plays three parts, chosen by its first argument: the
// launcher (what `sbf egress-qemu` does), the supervisor (`sbf
// egress-guard`) and the guarded program (QEMU), which makes the calls a
// test names on its stdin and answers each with "ok" or the errno.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "launch":
			runLauncher(os.Args[2])
		case "supervise":
			cfg, err := ReadConfig(os.Args[2])
			if err == nil {
				err = Supervise(cfg, clock.Real{})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		case "probe":
			runProbe()
			os.Exit(0)
		case "listen": // a loopback service of another process than the agent
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				os.Exit(1)
			}
			fmt.Println(ln.Addr().(*net.TCPAddr).Port)
			io.Copy(io.Discard, os.Stdin)
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

const pidFileName = "guard.pid"

func runLauncher(dir string) {
	self, _ := os.Executable()
	var rules Rules
	data, _ := os.ReadFile(filepath.Join(dir, "rules"))
	agentPID := 0
	for _, f := range strings.Fields(string(data)) {
		if f == "agent" { // the test process plays Lima's host agent
			agentPID = os.Getppid()
			continue
		}
		if p, err := strconv.Atoi(f); err == nil {
			rules.Ports = append(rules.Ports, p)
		} else {
			rules.Endpoints = append(rules.Endpoints, netip.MustParseAddrPort(f))
		}
	}
	stderr, _ := os.Create(filepath.Join(dir, "guard.stderr"))
	err := Exec(Launch{Path: self, Argv: []string{self, "probe"}, Env: os.Environ(),
		Supervisor: []string{self, "supervise"}, ConfigPath: filepath.Join(dir, "guard.json"), Stderr: stderr,
		Config: Config{Sandbox: "api", Rules: rules, ResolvConf: filepath.Join(dir, "resolv.conf"),
			LogPath: filepath.Join(dir, "guard.log"), PIDFile: filepath.Join(dir, pidFileName), AgentPID: agentPID}})
	fmt.Println("launch failed:", err)
	os.Exit(1)
}

// runProbe reads "OP NETWORK ADDRESS" lines: connect, sendto, sendmsg,
// sendmmsg (tcp4, tcp6, udp4, unix), "child" to run one OP in a child
// process (it inherits the filter), "connect-nb" for a connect that may
// only start.
func runProbe() {
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if f[0] == "child" {
			self, _ := os.Executable()
			cmd := exec.Command(self, "probe")
			cmd.Stdin = strings.NewReader(strings.Join(f[1:], " ") + "\n")
			out, _ := cmd.Output()
			fmt.Println(strings.TrimPrefix(strings.TrimSpace(string(out)), "ready\n"))
			continue
		}
		fmt.Println(probeCall(f[0], f[1], f[2]))
	}
}

func probeCall(op, network, address string) string {
	domain, typ, sa := sockaddrOf(network, address)
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "socket: " + err.Error()
	}
	defer unix.Close(fd)
	msg := []byte("probe")
	switch op {
	case "connect":
		err = unix.Connect(fd, sa)
	case "connect-nb":
		unix.SetNonblock(fd, true)
		if err = unix.Connect(fd, sa); err == unix.EINPROGRESS {
			err = nil
		}
	case "sendto":
		err = unix.Sendto(fd, msg, 0, sa)
	case "sendmsg":
		_, err = unix.SendmsgN(fd, msg, nil, sa, 0)
	case "sendmmsg":
		err = sendmmsg(fd, msg, address)
	case "selfpair": // libslirp's socket pair for a guestfwd command: listen, then connect to it
		err = selfPair(fd, domain, address)
	}
	if err != nil {
		return unix.ErrnoName(err.(unix.Errno))
	}
	return "ok"
}

func sockaddrOf(network, address string) (int, int, unix.Sockaddr) {
	if network == "unix" {
		return unix.AF_UNIX, unix.SOCK_STREAM, &unix.SockaddrUnix{Name: address}
	}
	ap := netip.MustParseAddrPort(address)
	typ := unix.SOCK_STREAM
	if strings.HasPrefix(network, "udp") {
		typ = unix.SOCK_DGRAM
	}
	if strings.HasSuffix(network, "6") {
		return unix.AF_INET6, typ, &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	return unix.AF_INET, typ, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
}

// selfPair listens on address (port 0) and connects fd to that listener,
// as libslirp's slirp_socketpair_with_oob does.
func selfPair(fd, domain int, address string) error {
	ln, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(ln)
	ap := netip.MustParseAddrPort(address)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: ap.Addr().As4()}); err != nil {
		return err
	}
	if err := unix.Listen(ln, 1); err != nil {
		return err
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		return err
	}
	return unix.Connect(fd, sa)
}

// sendmmsg sends one message to an IPv4 address (x/sys has no wrapper).
func sendmmsg(fd int, msg []byte, address string) error {
	ap := netip.MustParseAddrPort(address)
	var sa unix.RawSockaddrInet4
	sa.Family = unix.AF_INET
	sa.Port = ap.Port()<<8 | ap.Port()>>8
	sa.Addr = ap.Addr().As4()
	iov := unix.Iovec{Base: &msg[0]}
	iov.SetLen(len(msg))
	var hdr struct {
		unix.Msghdr
		n uint32
		_ uint32
	}
	hdr.Name, hdr.Namelen = (*byte)(unsafe.Pointer(&sa)), unix.SizeofSockaddrInet4
	hdr.Iov, hdr.Iovlen = &iov, 1
	_, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdr)), 1, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// guarded is a probe running under the guard.
type guarded struct {
	t   *testing.T
	dir string
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startGuarded(t *testing.T, rules string) *guarded {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "rules"), rules)
	writeFile(t, filepath.Join(dir, "resolv.conf"), "nameserver 127.0.0.2\n")
	self, _ := os.Executable()
	g := &guarded{t: t, dir: dir, cmd: exec.Command(self, "launch", dir)}
	g.in, _ = g.cmd.StdinPipe()
	stdout, _ := g.cmd.StdoutPipe()
	g.cmd.Stderr = os.Stderr
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.in.Close(); g.cmd.Wait() })
	g.out = bufio.NewScanner(stdout)
	if !g.out.Scan() || g.out.Text() != "ready" {
		stderr, _ := os.ReadFile(filepath.Join(dir, "guard.stderr"))
		t.Fatalf("the guarded probe did not start: %q (guard: %s)", g.out.Text(), stderr)
	}
	return g
}

func (g *guarded) call(line string) string {
	g.t.Helper()
	fmt.Fprintln(g.in, line)
	if !g.out.Scan() {
		g.t.Fatalf("%s: the probe ended", line)
	}
	return g.out.Text()
}

func tcpListener(t *testing.T, network, addr string) int {
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s listener on %s here: %v", network, addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// udpListener listens for UDP on loopback on a port none of taken's: the
// guard opens a port to TCP and UDP alike, and UDP's ephemeral ports are
// chosen apart from TCP's, so the kernel may hand out an allowed number.
func udpListener(t *testing.T, taken ...int) *net.UDPConn {
	for {
		udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(taken, udp.LocalAddr().(*net.UDPAddr).Port) {
			t.Cleanup(func() { udp.Close() })
			return udp
		}
		defer udp.Close() // held until another port is found
	}
}

func TestGuardedProcessReachesNoHostService(t *testing.T) {
	open := tcpListener(t, "tcp4", "127.0.0.1:0")
	allowed := tcpListener(t, "tcp4", "127.0.0.1:0")
	endpoint := tcpListener(t, "tcp4", "127.0.0.1:0")
	wild := tcpListener(t, "tcp4", "0.0.0.0:0") // reached on every host address
	udp := udpListener(t, allowed, endpoint)
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	g := startGuarded(t, fmt.Sprintf("%d 127.0.0.1:%d", allowed, endpoint))
	loop := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	cases := []struct{ call, want string }{
		{"connect tcp4 " + loop(open), "ECONNREFUSED"},
		{"connect tcp4 0.0.0.0:" + strconv.Itoa(open), "ECONNREFUSED"},
		{"connect tcp6 [::ffff:127.0.0.1]:" + strconv.Itoa(open), "ECONNREFUSED"},
		{"sendto udp4 " + udp.LocalAddr().String(), "EACCES"},
		{"sendmsg udp4 " + udp.LocalAddr().String(), "EACCES"},
		{"sendmmsg udp4 " + udp.LocalAddr().String(), "EACCES"},
		{"sendto udp4 255.255.255.255:9", "EACCES"},
		{"sendto udp4 224.0.0.251:5353", "EACCES"},
		{"child connect tcp4 " + loop(open), "ECONNREFUSED"}, // the relays QEMU starts carry the filter
		{"connect tcp4 " + loop(allowed), "ok"},              // [policy] guest_host_ports
		{"connect tcp4 " + loop(endpoint), "ok"},             // the proxy's own address
		{"sendto udp4 127.0.0.2:53", "ok"},                   // DNS to resolv.conf's resolver
		{"sendto udp4 127.0.0.2:54", "EACCES"},               // nothing else there
		{"connect unix " + sock, "ok"},                       // the relays' way to the proxy
		{"child connect unix " + sock, "ok"},
		{"selfpair tcp4 0.0.0.0:0", "ok"},   // libslirp 4.7's pair for a guestfwd command
		{"selfpair tcp4 127.0.0.1:0", "ok"}, // and later versions
	}
	if a, ok := hostAddress(); ok {
		cases = append(cases, struct{ call, want string }{"connect tcp4 " + a + ":" + strconv.Itoa(wild),
			"ECONNREFUSED"})
	}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil { // kept open: the kernel would accept
		defer ln.Close()
		cases = append(cases, struct{ call, want string }{"connect tcp6 " + ln.Addr().String(), "ECONNREFUSED"})
	}
	for _, c := range cases {
		if got := g.call(c.call); got != c.want {
			t.Errorf("%s: %s, want %s", c.call, got, c.want)
		}
	}
	// Elsewhere is the egress mode's business: the guard lets it start.
	if got := g.call("connect-nb tcp4 192.0.2.1:80"); got != "ok" && got != "ENETUNREACH" {
		t.Errorf("a connect to another machine: %s, want it to go on", got)
	}
	udp.SetReadDeadline(clock.Real{}.Now()) // anything the refusals let through is queued already
	if n, _, err := udp.ReadFrom(make([]byte, 16)); err == nil {
		t.Errorf("a refused datagram arrived (%d bytes)", n)
	}
	entries, err := egress.ReadLog(filepath.Join(g.dir, "guard.log"), 0)
	if err != nil || len(entries) < 8 || entries[0].Method != "connect" || entries[0].Decision != egress.Denied ||
		entries[0].Addr != loop(open) || !strings.Contains(entries[0].Reason, "guest_host_ports") {
		t.Errorf("guard.log: %v %+v", err, entries)
	}
}

// hostAddress is a non-loopback IPv4 address of this host, if any.
func hostAddress() (string, bool) {
	h, err := CurrentHost()
	if err != nil {
		return "", false
	}
	for _, a := range h.Addrs {
		if a.Is4() && !a.IsLoopback() && !a.IsLinkLocalUnicast() {
			if ln, err := net.Listen("tcp4", a.String()+":0"); err == nil {
				ln.Close()
				return a.String(), true
			}
		}
	}
	return "", false
}

func TestGuardFailsClosedWithoutItsSupervisor(t *testing.T) {
	allowed := tcpListener(t, "tcp4", "127.0.0.1:0")
	g := startGuarded(t, strconv.Itoa(allowed))
	call := "connect tcp4 127.0.0.1:" + strconv.Itoa(allowed)
	if got := g.call(call); got != "ok" {
		t.Fatalf("with the supervisor: %s", got)
	}
	data, err := os.ReadFile(filepath.Join(g.dir, pidFileName))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		t.Fatalf("guard.pid: %q %v", data, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	for _, c := range []string{call, "connect tcp4 192.0.2.1:80", "sendto udp4 127.0.0.2:53"} {
		if got := g.call(c); got != "ENOSYS" {
			t.Errorf("without the supervisor, %s: %s, want ENOSYS", c, got)
		}
	}
}

// waitDead waits until pid has exited (a zombie: its files, the listener
// among them, are closed).
func waitDead(t *testing.T, pid int) {
	for i := 0; ; i++ {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if _, rest, ok := strings.Cut(string(stat), ") "); ok && (rest[0] == 'Z' || rest[0] == 'X') {
			return
		}
		if i == 100000 {
			t.Fatalf("the supervisor %d did not die", pid)
		}
		runtime.Gosched()
	}
}

// Lima's host agent started QEMU; its DNS server and the host ends of the
// VM's port forwards listen on loopback, and stay reachable: TCP where it
// listens on TCP, UDP where it has a UDP socket, and nothing of any other
// process.
func TestGuardLetsTheHostAgentsOwnPortsThrough(t *testing.T) {
	agentTCP := tcpListener(t, "tcp4", "127.0.0.1:0")
	agentUDP, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer agentUDP.Close()
	self, _ := os.Executable()
	other := exec.Command(self, "listen")
	stdin, _ := other.StdinPipe()
	out, _ := other.StdoutPipe()
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); other.Wait() }()
	var otherPort int
	fmt.Fscan(out, &otherPort)
	g := startGuarded(t, "agent")
	udpPort := strconv.Itoa(agentUDP.LocalAddr().(*net.UDPAddr).Port)
	for _, c := range []struct{ call, want string }{
		{"connect tcp4 127.0.0.1:" + strconv.Itoa(agentTCP), "ok"},
		{"sendto udp4 127.0.0.1:" + udpPort, "ok"},
		{"connect tcp4 127.0.0.1:" + strconv.Itoa(otherPort), "ECONNREFUSED"},
		{"sendto udp4 127.0.0.1:" + strconv.Itoa(agentTCP), "EACCES"}, // its TCP port, by UDP
	} {
		if got := g.call(c.call); got != c.want {
			t.Errorf("%s: %s, want %s", c.call, got, c.want)
		}
	}
}

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0035":                         "0.0.0.0:53",
		"00000000000000000000000001000000:0016": "[::1]:22",
		"0000000000000000FFFF00000100007F:0050": "127.0.0.1:80",
	} {
		if got, ok := parseProcAddr(in); !ok || got.String() != want {
			t.Errorf("parseProcAddr(%s) = %v %v, want %s", in, got, ok, want)
		}
	}
}
