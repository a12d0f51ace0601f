package gitstate

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkRead reads a clean repository of 2,000 files in 100 folders
// (compare: `git status --porcelain` on the same tree).
func BenchmarkRead(b *testing.B) {
	ws := b.TempDir()
	g := newGit(b, ws)
	g.run("init", "-q", "-b", "main")
	for i := range 2000 {
		write(b, ws, fmt.Sprintf("d%02d/f%04d.txt", i%100, i), fmt.Sprintf("file %d\n", i))
	}
	g.run("add", ".")
	g.run("commit", "-q", "-m", "many")
	b.ResetTimer()
	for range b.N {
		if st, err := Read(context.Background(), ws); err != nil || st.Dirty || len(st.Tracked) != 2000 {
			b.Fatalf("Read = %d tracked, dirty %v, %v", len(st.Tracked), st.Dirty, err)
		}
	}
}
