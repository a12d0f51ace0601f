//go:build linux && (amd64 || arm64)

package hostguard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// struct seccomp_data, struct seccomp_notif and struct seccomp_notif_resp
// (linux/seccomp.h).
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type notif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Data  seccompData
}

type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

const (
	ioctlNotifRecv    = unix.SECCOMP_IOCTL_NOTIF_RECV
	ioctlNotifSend    = unix.SECCOMP_IOCTL_NOTIF_SEND
	ioctlNotifIDValid = 0x40082102 // SECCOMP_IOW(2, __u64)
	flagContinue      = 1          // SECCOMP_USER_NOTIF_FLAG_CONTINUE
	maxSockaddr       = 128        // sizeof(struct sockaddr_storage)
	maxMmsg           = 1024       // UIO_MAXIOV: sendmmsg sends no more
	msghdrSize        = 56         // struct msghdr on 64-bit Linux
	mmsghdrSize       = 64         // struct mmsghdr: msghdr, msg_len, padding
)

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

func recvNotif(fd int) (notif, error) {
	var n notif // the kernel wants it zeroed
	err := ioctl(fd, ioctlNotifRecv, unsafe.Pointer(&n))
	return n, err
}

func sendResp(fd int, r notifResp) error { return ioctl(fd, ioctlNotifSend, unsafe.Pointer(&r)) }

func idValid(fd int, id uint64) bool { return ioctl(fd, ioctlNotifIDValid, unsafe.Pointer(&id)) == nil }

// callerMemory is the memory of the process that made a call, opened and
// then checked to still be that call's (a PID may be reused once its
// process is gone; a notification ID is valid only while its call waits).
type callerMemory struct{ f *os.File }

func openCaller(listener int, n notif) (callerMemory, error) {
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(n.PID), 10) + "/mem")
	if err != nil {
		return callerMemory{}, fmt.Errorf("reading the caller's memory: %w", err)
	}
	if !idValid(listener, n.ID) {
		f.Close()
		return callerMemory{}, errors.New("the call ended before it was judged")
	}
	return callerMemory{f: f}, nil
}

func (m callerMemory) Close() { m.f.Close() }

func (m callerMemory) read(addr uint64, n int) ([]byte, error) {
	if addr == 0 || addr > 1<<62 {
		return nil, fmt.Errorf("address %#x cannot be read", addr)
	}
	b := make([]byte, n)
	got, err := m.f.ReadAt(b, int64(addr))
	if got < n {
		return nil, fmt.Errorf("reading %d bytes at %#x of the caller's memory: %w", n, addr, err)
	}
	return b, nil
}

// sockaddrAt reads a socket address of length size (capped) at addr.
func (m callerMemory) sockaddrAt(addr, size uint64) (target, error) {
	size = min(size, maxSockaddr)
	b, err := m.read(addr, int(size))
	if err != nil {
		return target{}, err
	}
	t, ok := parseSockaddr(b)
	if !ok {
		return t, fmt.Errorf("a socket address of %d bytes is too short for family %d", size, t.family)
	}
	return t, nil
}

// targets lists the addresses a notified call sends to: none when it names
// no address (a sendmsg on a connected socket), which then goes on.
func (m callerMemory) targets(d seccompData) ([]target, error) {
	switch uint64(d.Nr) {
	case unix.SYS_CONNECT:
		t, err := m.sockaddrAt(d.Args[1], d.Args[2])
		return []target{t}, err
	case unix.SYS_SENDTO:
		if d.Args[4] == 0 {
			return nil, nil
		}
		t, err := m.sockaddrAt(d.Args[4], d.Args[5])
		return []target{t}, err
	case unix.SYS_SENDMSG:
		t, named, err := m.msgName(d.Args[1])
		if !named {
			return nil, err
		}
		return []target{t}, err
	case unix.SYS_SENDMMSG:
		var out []target
		for i := range min(d.Args[2], maxMmsg) {
			t, named, err := m.msgName(d.Args[1] + i*mmsghdrSize)
			if err != nil {
				return nil, err
			}
			if named {
				out = append(out, t)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("system call %d is not one the guard judges", d.Nr)
}

// msgName reads a struct msghdr's msg_name (first its pointer, then its
// length).
func (m callerMemory) msgName(hdr uint64) (target, bool, error) {
	b, err := m.read(hdr, 12)
	if err != nil {
		return target{}, true, err
	}
	name, size := binary.NativeEndian.Uint64(b), binary.NativeEndian.Uint32(b[8:])
	if name == 0 || size == 0 {
		return target{}, false, nil
	}
	t, err := m.sockaddrAt(name, uint64(size))
	return t, true, err
}

func nativeUint64(b []byte) uint64 { return binary.NativeEndian.Uint64(b) }
