package lima

import (
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// parseSnapshotList reads what `limactl snapshot list` prints: QEMU's
// table (qemu-img snapshot -l of a stopped VM, HMP info snapshots of a
// running one), a header then one row per snapshot:
//
//	ID        TAG               VM SIZE                DATE     VM CLOCK     ICOUNT
//	1         clean             241 MiB 2026-01-02 10:00:00 00:00:12.345          0
//
// A row without a date where QEMU puts it (another QEMU's extra lines) is
// skipped; a size it cannot read is left unknown.
func parseSnapshotList(out string) []drivers.SnapshotInfo {
	var list []drivers.SnapshotInfo
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] == "ID" || !drivers.ValidSnapshotName(f[1]) {
			continue
		}
		t, err := time.ParseInLocation("2006-01-02 15:04:05", f[4]+" "+f[5], time.Local)
		if err != nil {
			continue
		}
		list = append(list, drivers.SnapshotInfo{Name: f[1], SizeBytes: qemuSize(f[2], f[3]), CreatedAt: t.UTC()})
	}
	return list
}

// qemuSize reads QEMU's human size ("0 B", "241 MiB", "1.25 GiB"); zero
// when it cannot.
func qemuSize(number, unit string) int64 {
	n, err := strconv.ParseFloat(number, 64)
	if err != nil || n < 0 {
		return 0
	}
	shift := map[string]uint{"B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}
	s, ok := shift[unit]
	if !ok {
		return 0
	}
	return int64(n * float64(uint64(1)<<s))
}
