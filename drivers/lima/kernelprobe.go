package lima

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/proc"
)

// A boot sector that runs proves little on some nested hosts: its first
// instructions run under KVM, yet a Linux kernel hangs once it sets the
// CPU up. So KVM is trusted only after a real kernel has started a
// program in user space: the probe boots a kernel with an initramfs whose
// /init prints probeMarker on the console and restarts the machine.

// probeMarker is what the probe's /init writes to the console.
const probeMarker = "SBF-KVM-PROBE: user space runs\n"

// kernelProbeTimeout bounds the kernel trial (a variable for tests): a kernel under KVM reaches
// user space in a second or two; one that hangs never does.
var kernelProbeTimeout = 20 * time.Second

// probeInit is a static x86-64 Linux program: write(1, probeMarker),
// then reboot(RESTART), which QEMU started with -no-reboot turns into an
// exit. Hand-assembled so that sbf ships no binary blob it cannot read.
var probeInit = func() []byte {
	const base, headers = 0x400000, 64 + 56
	code := []byte{
		0xb8, 0x01, 0, 0, 0, // mov eax, 1 (write)
		0xbf, 0x01, 0, 0, 0, // mov edi, 1 (stdout: the console)
		0x48, 0x8d, 0x35, 0, 0, 0, 0, // lea rsi, [rip+disp]: the marker, after the code (disp below)
		0xba, byte(len(probeMarker)), 0, 0, 0, // mov edx, len
		0x0f, 0x05, // syscall
		0xb8, 0xa9, 0, 0, 0, // mov eax, 169 (reboot)
		0xbf, 0xad, 0xde, 0xe1, 0xfe, // mov edi, LINUX_REBOOT_MAGIC1
		0xbe, 0x69, 0x19, 0x12, 0x28, // mov esi, LINUX_REBOOT_MAGIC2
		0xba, 0x67, 0x45, 0x23, 0x01, // mov edx, LINUX_REBOOT_CMD_RESTART
		0x0f, 0x05, // syscall
		0xeb, 0xfe, // jmp . (not reached)
	}
	const afterLea = 17 // the offset of the instruction after lea, which rip-relative counts from
	code[13] = byte(len(code) - afterLea)
	prog := append(code, probeMarker...)
	size := uint64(headers + len(prog))
	le := binary.LittleEndian
	elf := make([]byte, headers, size)
	copy(elf, "\x7fELF\x02\x01\x01")     // 64-bit, little-endian, version 1
	le.PutUint16(elf[16:], 2)            // ET_EXEC
	le.PutUint16(elf[18:], 62)           // EM_X86_64
	le.PutUint32(elf[20:], 1)            // EV_CURRENT
	le.PutUint64(elf[24:], base+headers) // entry: the code
	le.PutUint64(elf[32:], 64)           // program headers follow the ELF header
	le.PutUint16(elf[52:], 64)           // ELF header size
	le.PutUint16(elf[54:], 56)           // program header size
	le.PutUint16(elf[56:], 1)            // one program header
	ph := elf[64:]
	le.PutUint32(ph[0:], 1)     // PT_LOAD
	le.PutUint32(ph[4:], 5)     // readable, executable
	le.PutUint64(ph[16:], base) // the whole file, mapped at base
	le.PutUint64(ph[24:], base)
	le.PutUint64(ph[32:], size)
	le.PutUint64(ph[40:], size)
	le.PutUint64(ph[48:], 0x1000)
	return append(elf, prog...)
}()

// probeInitramfs is a newc cpio archive holding /dev/console and /init.
func probeInitramfs() []byte {
	var b bytes.Buffer
	entry := func(name string, mode, rdevMajor, rdevMinor uint32, data []byte) {
		fmt.Fprintf(&b, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			0, mode, 0, 0, 1, 0, len(data), 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
		b.WriteString(name + "\x00")
		pad(&b)
		b.Write(data)
		pad(&b)
	}
	entry("dev", 0o040755, 0, 0, nil)
	entry("dev/console", 0o020600, 5, 1, nil)
	entry("init", 0o100755, 0, 0, probeInit)
	entry("TRAILER!!!", 0, 0, 0, nil)
	return b.Bytes()
}

func pad(b *bytes.Buffer) {
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
}

// kernelProbe boots kernel under QEMU with the given accelerator flags
// and probeInitramfs; ok when its /init printed the marker in time.
func kernelProbe(ctx context.Context, qemu, kernel, workDir string, timeout time.Duration,
	accel ...string) (ok bool, reason string) {
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		workDir = os.TempDir()
	}
	initrd, err := os.CreateTemp(workDir, "kvm-probe-*.cpio")
	if err != nil {
		return false, fmt.Sprintf("cannot write the kernel probe: %v", err)
	}
	defer os.Remove(initrd.Name())
	_, err = initrd.Write(probeInitramfs())
	if cerr := initrd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Sprintf("cannot write the kernel probe: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// panic=0: a kernel that cannot start /init waits instead of restarting,
	// so only the probe's own restart ends QEMU early.
	args := append(accel, "-m", "256", "-nodefaults", "-display", "none", "-no-reboot", "-serial", "stdio",
		"-kernel", kernel, "-initrd", initrd.Name(),
		"-append", "console=ttyS0 panic=0 quiet rdinit=/init")
	cmd := proc.Command(pctx, qemu, args...)
	out := &cappedBuffer{max: 64 << 10}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	switch {
	case strings.Contains(out.String(), strings.TrimSpace(probeMarker)):
		return true, ""
	case pctx.Err() != nil:
		return false, fmt.Sprintf("a Linux kernel (%s) did not reach user space within %s", filepath.Base(kernel), timeout)
	}
	msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
	return false, fmt.Sprintf("QEMU with %s ended before the kernel reached user space (%v: %s)",
		strings.Join(accel, " "), err, msg)
}

// cappedBuffer keeps the first max bytes written to it: the console of a
// probe is read for one line, whatever the kernel prints.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
