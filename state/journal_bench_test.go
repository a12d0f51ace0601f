package state

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// indexEntries is a workspace's n index entries, every lease ending at end.
func indexEntries(n int, end time.Time) []IndexEntry {
	out := make([]IndexEntry, n)
	for i := range out {
		name := fmt.Sprintf("sb%05d", i)
		out[i] = IndexEntry{Instance: "sbf-0123abcd-" + name, Sandbox: name, Driver: "sim",
			WorkspaceRoot: "/home/someone/projects/a-workspace", WorkspaceID: "ws_0123456789ab", ExpiresAt: end}
	}
	return out
}

// BenchmarkIndexSync is the host index's part of a no-op `sbf apply` of
// 1,000 sandboxes: every entry put again, unchanged, or with its lease
// renewed (an apply a second after the last one moves every lease end).
// written-B/op is what the syncs wrote to instances.index.
func BenchmarkIndexSync(b *testing.B) {
	for _, renewed := range []bool{false, true} {
		b.Run(fmt.Sprintf("sandboxes=1000/renewed=%v", renewed), func(b *testing.B) {
			dir := b.TempDir()
			idx := OpenHostIndex(dir)
			end := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
			if err := idx.PutAll(b.Context(), indexEntries(1000, end)); err != nil {
				b.Fatal(err)
			}
			var written int64
			last := fileSize(b, dir)
			b.ReportAllocs()
			for b.Loop() {
				if renewed {
					end = end.Add(time.Second)
				}
				if err := idx.PutAll(b.Context(), indexEntries(1000, end)); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if size := fileSize(b, dir); size >= last {
					written += size - last
				} else {
					written += size // rewritten whole
				}
				last = fileSize(b, dir)
				b.StartTimer()
			}
			b.ReportMetric(float64(written)/float64(b.N), "written-B/op")
			b.ReportMetric(float64(last), "file-B")
		})
	}
}

func fileSize(b *testing.B, dir string) int64 {
	info, err := os.Stat(filepath.Join(dir, "instances.index"))
	if err != nil {
		b.Fatal(err)
	}
	return info.Size()
}
