//go:build linux && (amd64 || arm64)

package hostguard

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The calls slirp makes toward an address (libslirp: tcp_fconnect's
// connect, sosendto's and icmp_send's sendto) and the two that could do the
// same through a message header. Plain send is sendto with no address on
// amd64 and arm64 (there is no send syscall): the filter lets it through
// without asking, or every byte of every connection would cost a round trip.
var judgedCalls = []uint32{unix.SYS_CONNECT, unix.SYS_SENDMSG, unix.SYS_SENDMMSG}

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

const (
	bpfLoad = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfRet  = unix.BPF_RET | unix.BPF_K
)

// program is the filter: on this architecture, the guarded calls and a
// sendto whose address (argument 4) is not NULL go to the supervisor;
// everything else is allowed. A call through another architecture's
// entry (x32, the 32-bit compat table) fails: its numbers mean other calls,
// and QEMU makes none.
func program() []unix.SockFilter {
	var p []unix.SockFilter
	add := func(code uint16, jt, jf uint8, k uint32) {
		p = append(p, unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k})
	}
	notify := uint32(unix.SECCOMP_RET_USER_NOTIF)
	refuse := uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.ENOSYS)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	add(bpfLoad, 0, 0, offArch)
	add(bpfJeq, 1, 0, auditArch)
	add(bpfRet, 0, 0, refuse)
	add(bpfLoad, 0, 0, offNr)
	if x32Bit != 0 {
		add(bpfJge, 0, 1, x32Bit)
		add(bpfRet, 0, 0, refuse)
	}
	for _, nr := range judgedCalls {
		add(bpfJeq, 0, 1, nr)
		add(bpfRet, 0, 0, notify)
	}
	add(bpfJeq, 1, 0, unix.SYS_SENDTO)
	add(bpfRet, 0, 0, allow)
	// sendto(fd, buf, len, flags, addr, addrlen): both halves of addr.
	add(bpfLoad, 0, 0, offArgs+4*8)
	add(bpfJeq, 1, 0, 0)
	add(bpfRet, 0, 0, notify)
	add(bpfLoad, 0, 0, offArgs+4*8+4)
	add(bpfJeq, 1, 0, 0)
	add(bpfRet, 0, 0, notify)
	add(bpfRet, 0, 0, allow)
	return p
}

// install sets no_new_privs and installs the filter on the calling thread
// only, returning the listener fd (close-on-exec) that receives its
// notifications. The caller must have locked its goroutine to the thread,
// and exec the guarded program from it.
func install() (int, error) {
	if auditArch == 0 {
		return -1, fmt.Errorf("the host guard does not know this architecture's system calls")
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("setting no_new_privs: %w", err)
	}
	p := program()
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return -1, fmt.Errorf("installing the seccomp filter (needs Linux 5.5 or later): %w", errno)
	}
	return int(fd), nil
}
