package spec

import (
	"fmt"
	"io"
	"os"
)

// Limits bound what one layer may hold, so that no file or request can
// make loading slow or large. Real configuration stays far below them.
type Limits struct {
	MaxBytes    int // size of one file
	MaxKeyDepth int // parts of one key path, array indices included
	MaxArrayLen int // items of one array
}

// DefaultLimits apply to every layer sbf reads.
var DefaultLimits = Limits{MaxBytes: 1 << 20, MaxKeyDepth: 16, MaxArrayLen: 10_000}

func (lim Limits) sizeMessage(n int) string {
	return fmt.Sprintf("is %s; files are limited to %s", byteSize(n), byteSize(lim.MaxBytes))
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// tooLarge is a file over the size limit; it carries the size for the
// message.
type tooLarge struct{ size int64 }

func (e *tooLarge) Error() string { return fmt.Sprintf("file is %s", byteSize(int(e.size))) }

// readLimited reads a file, refusing one larger than max (plus a byte
// order mark) without reading more of it than that.
func readLimited(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	allowed := int64(max) + int64(len(bom))
	data, err := io.ReadAll(io.LimitReader(f, allowed+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > allowed {
		size := int64(len(data))
		if info, err := f.Stat(); err == nil && info.Size() > size {
			size = info.Size()
		}
		return nil, &tooLarge{size: size}
	}
	return data, nil
}
