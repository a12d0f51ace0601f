#!/usr/bin/env python3
"""The QEMU mechanics of sbf fork on Lima (docs/drivers.md, Fork), checked without a guest OS.

A source QEMU (TCG, 128 MiB, a virtio qcow2 disk over a backing file, vmgenid) is paused; its
disk is frozen with blockdev-snapshot-sync (it goes on writing to a new overlay, which takes the
old file name again and is pointed at the frozen base with change-backing-file); its RAM and
device state go to a file (migrate exec:cat); it runs on. A child QEMU starts from that file
(-incoming) on its own qcow2 overlay of the frozen base, with a new vmgenid GUID. Writes go
through QEMU's block layer (the HMP qemu-io command); the images are read back offline.

Usage: scripts/qemu-fork-probe.py [WORKDIR]   (needs qemu-system-x86_64, qemu-img, qemu-io)
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid

KIB = 1024


class QMP:
    def __init__(self, path):
        for _ in range(200):
            try:
                self.s = socket.socket(socket.AF_UNIX)
                self.s.connect(path)
                break
            except OSError:
                time.sleep(0.05)
        self.f = self.s.makefile("rw")
        json.loads(self.f.readline())
        self.cmd("qmp_capabilities")

    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, "arguments": args}) + "\n")
        self.f.flush()
        while True:
            r = json.loads(self.f.readline())
            if "event" in r:
                continue
            if "error" in r:
                raise RuntimeError(f"{name}: {r['error']}")
            return r["return"]

    def write(self, pattern, offset):
        self.cmd("human-monitor-command", **{"command-line": f'qemu-io d0 "write -P {pattern} {offset} 64k"'})


def qemu(d, name, disk, guid, extra=()):
    sock = os.path.join(d, name + ".qmp")
    args = ["qemu-system-x86_64", "-machine", "q35,accel=tcg", "-m", "128", "-display", "none", "-nodefaults",
            "-qmp", f"unix:{sock},server=on,wait=off", "-drive", f"file={disk},if=virtio,format=qcow2,id=d0",
            "-device", f"vmgenid,guid={guid}", *extra]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, name + ".err"), "w"))
    return proc, QMP(sock)


def reads(image, pattern, offset):
    out = subprocess.run(["qemu-io", "-r", "-f", "qcow2", "-c", f"read -P {pattern} {offset} 64k", image],
                         capture_output=True, text=True).stdout
    return "verification failed" not in out


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="qemu-fork-")
    os.chdir(d)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "base0.qcow2", "64M"], check=True)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", "base0.qcow2", "-F", "qcow2", "diffdisk"],
                   check=True)
    src, s = qemu(d, "src", "diffdisk", "11111111-1111-1111-1111-111111111111")
    s.write("0xab", 0)  # before the fork: every child sees it

    began = time.monotonic()
    s.cmd("stop")
    s.cmd("blockdev-snapshot-sync", device="d0", **{"snapshot-file": f"{d}/diffdisk.live", "format": "qcow2"})
    s.cmd("migrate-set-parameters", **{"max-bandwidth": 8 << 30})
    s.cmd("migrate", uri=f"exec:cat > {d}/mem.state")
    while (status := s.cmd("query-migrate").get("status")) not in ("completed", "failed"):
        time.sleep(0.01)
    s.cmd("cont")
    paused = time.monotonic() - began
    assert status == "completed", status
    assert s.cmd("query-status")["status"] == "running"
    # The frozen base takes a name of its own; the source's overlay takes the name Lima opens.
    os.rename("diffdisk", "fork-base.qcow2")
    os.rename("diffdisk.live", "diffdisk")
    top = s.cmd("query-block")[0]["inserted"]["node-name"]
    s.cmd("change-backing-file", device="d0", **{"image-node-name": top, "backing-file": f"{d}/fork-base.qcow2"})
    s.write("0xcd", 64 * KIB)  # the source after the fork: no child sees it

    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", f"{d}/fork-base.qcow2", "-F", "qcow2",
                    "child.qcow2"], check=True)
    guid = str(uuid.uuid4())
    began = time.monotonic()
    child, c = qemu(d, "child", "child.qcow2", guid, ("-incoming", f"exec:cat {d}/mem.state"))
    while (state := c.cmd("query-status")["status"]) == "inmigrate":
        time.sleep(0.01)
    restored = time.monotonic() - began
    assert state == "paused", state  # the source was paused when saved: sbf resumes the child itself
    c.cmd("cont")
    assert c.cmd("query-vm-generation-id")["guid"] == guid
    c.write("0xee", 128 * KIB)  # the child's own write: the source never sees it
    info = subprocess.run(["qemu-img", "info", "-U", "--output=json", "child.qcow2"], capture_output=True, text=True)
    child_kib = json.loads(info.stdout)["actual-size"] // KIB
    c.cmd("quit")
    s.cmd("quit")
    child.wait()
    src.wait()

    checks = {
        "child sees the pre-fork write": reads("child.qcow2", "0xab", 0),
        "child does not see the source's later write": reads("child.qcow2", "0", 64 * KIB),
        "child keeps its own write": reads("child.qcow2", "0xee", 128 * KIB),
        "source keeps the pre-fork write": reads("diffdisk", "0xab", 0),
        "source keeps its later write (after a restart, by its file name)": reads("diffdisk", "0xcd", 64 * KIB),
        "source does not see the child's write": reads("diffdisk", "0", 128 * KIB),
    }
    for what, ok in checks.items():
        print(("ok   " if ok else "FAIL ") + what)
    print(f"source paused {paused * 1000:.0f} ms; memory state {os.path.getsize('mem.state') // KIB} KiB; "
          f"child restored (QEMU start + incoming) in {restored * 1000:.0f} ms; child disk {child_kib} KiB; "
          f"child vmgenid {guid}")
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
