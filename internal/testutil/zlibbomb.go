package testutil

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/adler32"
)

// ZlibBomb is a loose git object whose header says "kind declared" and
// whose content inflates to inflated zero bytes: about a thousandth of that
// on disk. It deflates one MiB of zeros and repeats that block (its matches
// reach back only into zeros), so making a 1 GiB bomb costs what a MiB does
// (deflating 64 MiB took 15 s under the race detector); the trailer's
// Adler-32 is worked out, not summed over every byte.
func ZlibBomb(kind string, declared, inflated int) []byte {
	const block = 1 << 20
	header := fmt.Sprintf("%s %d\x00", kind, declared)
	var buf bytes.Buffer
	z := zlib.NewWriter(&buf)
	z.Write([]byte(header))
	z.Flush()
	start := buf.Len()
	z.Write(make([]byte, block))
	z.Flush()
	chunk := bytes.Clone(buf.Bytes()[start:])
	out := bytes.Clone(buf.Bytes()[:start])
	for range inflated / block {
		out = append(out, chunk...)
	}
	if rest := inflated % block; rest > 0 {
		var tail bytes.Buffer
		f, _ := flate.NewWriter(&tail, flate.BestCompression)
		f.Write(make([]byte, rest))
		f.Flush()
		out = append(out, tail.Bytes()...)
	}
	out = append(out, 0x03, 0x00) // the final block: empty, fixed codes
	sum := adler32.Checksum([]byte(header))
	a, b := uint64(sum&0xffff), uint64(sum>>16)
	b = (b + uint64(inflated)%65521*a) % 65521 // each zero adds a (unchanged) to b
	return binary.BigEndian.AppendUint32(out, uint32(b<<16|a))
}
