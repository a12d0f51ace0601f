//go:build linux && (amd64 || arm64)

package hostguard

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// agent is Lima's host agent, the process that started QEMU: its DNS
// server (Lima's hostResolver, which the guest reaches at slirp's gateway
// alias) and the host ends of the VM's declared port forwards listen on
// this host's loopback. They are the network as Lima gives it, so the
// guest may reach those ports, and no other process's.
type agent struct {
	pid   int
	pidfd int // -1: no agent; a pidfd says whether the PID is still that process
}

func openAgent(pid int) agent {
	if pid <= 0 {
		return agent{pidfd: -1}
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return agent{pidfd: -1}
	}
	return agent{pid: pid, pidfd: fd}
}

// listens says whether the agent holds a socket bound to to: listening
// TCP for a connect (slirp connects only for TCP), UDP for a send (slirp
// sends UDP and ICMP with sendto).
func (a agent) listens(tcp bool, to netip.AddrPort) bool {
	if a.pidfd < 0 || unix.PidfdSendSignal(a.pidfd, 0, nil, 0) != nil {
		return false // gone: its PID may be another process's now
	}
	return processListens(a.pid, tcp, to)
}

// processListens says whether process pid holds a socket bound to to (or
// to the wildcard address on its port): listening TCP when tcp, else UDP.
// For the calling process itself this is libslirp's own socket pair: for
// each guestfwd command it listens on a loopback (older versions: any)
// address and connects to it (slirp_socketpair_with_oob), its own
// business, which the guard lets through.
func processListens(pid int, tcp bool, to netip.AddrPort) bool {
	inodes := socketInodes(pid)
	if tcp {
		if listeners, err := tcpListeners(to); err == nil {
			for inode := range listeners {
				if inodes[strconv.FormatUint(uint64(inode), 10)] {
					return true
				}
			}
			return false
		}
		// No sock_diag (a kernel without inet_diag): the tables below say the same, slower.
	}
	tables := []string{"/proc/net/udp", "/proc/net/udp6"}
	if tcp {
		tables = []string{"/proc/net/tcp", "/proc/net/tcp6"}
	}
	for _, t := range tables {
		if boundIn(t, tcp, to, inodes) {
			return true
		}
	}
	return false
}

// socketInodes lists the inodes of pid's sockets.
func socketInodes(pid int) map[string]bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, e := range entries {
		link, err := os.Readlink(dir + "/" + e.Name())
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			out[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return out
}

// boundIn reads a /proc/net table for a socket of inodes bound to to (or
// to the wildcard address on its port); TCP sockets must be listening.
func boundIn(table string, tcp bool, to netip.AddrPort, inodes map[string]bool) bool {
	f, err := os.Open(table)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the heading
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || !inodes[fields[9]] || tcp && fields[3] != "0A" {
			continue
		}
		local, ok := parseProcAddr(fields[1])
		if ok && local.Port() == to.Port() && (local.Addr() == to.Addr() || local.Addr().IsUnspecified()) {
			return true
		}
	}
	return false
}

// parseProcAddr reads "0100007F:1F90": the address as the kernel's 32-bit
// words in this host's byte order, the port in hex.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexAddr)
	port, perr := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil || perr != nil || len(raw)%4 != 0 {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	addr, ok := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), ok
}
