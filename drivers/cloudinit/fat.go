package cloudinit

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf16"
)

// A FAT12 image in the 1.44 MB floppy geometry: the smallest filesystem
// Linux mounts and blkid labels (cloud-init finds its NoCloud seed by the
// label), written here because nothing on a Mac or in CI would otherwise
// make one without external tools. Files are few and small, all in the
// root folder, with VFAT long names ("user-data" is not an 8.3 name).
const (
	fatSectorSize  = 512
	fatSectors     = 2880
	fatReserved    = 1
	fatCount       = 2
	fatSectorsPer  = 9
	fatRootEntries = 224
	fatMedia       = 0xF0
	fatRootStart   = fatReserved + fatCount*fatSectorsPer // sector 19
	fatDataStart   = fatRootStart + fatRootEntries*32/fatSectorSize
	fatClusters    = fatSectors - fatDataStart // one sector per cluster
	dosDate1980    = 0x0021                    // 1980-01-01: fixed, so a seed is byte-for-byte reproducible
)

// fatFile is one file of the image's root folder.
type fatFile struct {
	Name string
	Data []byte
}

// fatImage lays files out in a new FAT12 image labelled label.
func fatImage(label string, volumeID uint32, files []fatFile) ([]byte, error) {
	if len(label) > 11 || strings.ToUpper(label) != label {
		return nil, fmt.Errorf("FAT label %q: want at most 11 upper-case characters", label)
	}
	img := make([]byte, fatSectors*fatSectorSize)
	bootSector(img[:fatSectorSize], label, volumeID)
	fat := make([]uint16, fatClusters+2)
	fat[0], fat[1] = 0xF00|fatMedia, 0xFFF
	root := img[fatRootStart*fatSectorSize : fatDataStart*fatSectorSize]
	entries := [][]byte{volumeEntry(label)}
	next := uint16(2)
	for i, f := range files {
		first, err := placeFile(img, fat, &next, f.Data)
		if err != nil {
			return nil, fmt.Errorf("placing %s in the seed image: %w", f.Name, err)
		}
		entries = append(entries, dirEntries(f.Name, i+1, int(first), len(f.Data))...)
	}
	if len(entries) > fatRootEntries {
		return nil, fmt.Errorf("too many files for a FAT12 root folder")
	}
	for i, e := range entries {
		copy(root[i*32:], e)
	}
	packed := packFAT12(fat)
	for n := range fatCount {
		copy(img[(fatReserved+n*fatSectorsPer)*fatSectorSize:], packed)
	}
	return img, nil
}

func bootSector(b []byte, label string, volumeID uint32) {
	copy(b, []byte{0xEB, 0x3C, 0x90})
	copy(b[3:11], "SBF     ")
	le := binary.LittleEndian
	le.PutUint16(b[11:], fatSectorSize)
	b[13] = 1 // sectors per cluster
	le.PutUint16(b[14:], fatReserved)
	b[16] = fatCount
	le.PutUint16(b[17:], fatRootEntries)
	le.PutUint16(b[19:], fatSectors)
	b[21] = fatMedia
	le.PutUint16(b[22:], fatSectorsPer)
	le.PutUint16(b[24:], 18) // sectors per track
	le.PutUint16(b[26:], 2)  // heads
	b[38] = 0x29             // extended boot signature: the next three fields are valid
	le.PutUint32(b[39:], volumeID)
	copy(b[43:54], padName(label, 11))
	copy(b[54:62], "FAT12   ")
	b[510], b[511] = 0x55, 0xAA
}

// placeFile writes data to consecutive clusters and chains them; it
// returns the first cluster (0 for an empty file).
func placeFile(img []byte, fat []uint16, next *uint16, data []byte) (uint16, error) {
	if len(data) == 0 {
		return 0, nil
	}
	n := (len(data) + fatSectorSize - 1) / fatSectorSize
	if int(*next)+n > len(fat) {
		return 0, fmt.Errorf("%d bytes do not fit", len(data))
	}
	first := *next
	for i := range n {
		c := first + uint16(i)
		off := (fatDataStart + int(c) - 2) * fatSectorSize
		copy(img[off:off+fatSectorSize], data[i*fatSectorSize:min(len(data), (i+1)*fatSectorSize)])
		fat[c] = c + 1
	}
	fat[first+uint16(n)-1] = 0xFFF // end of chain
	*next = first + uint16(n)
	return first, nil
}

// packFAT12 stores two 12-bit entries in every three bytes.
func packFAT12(fat []uint16) []byte {
	out := make([]byte, fatSectorsPer*fatSectorSize)
	for i, v := range fat {
		off := i * 3 / 2
		if i%2 == 0 {
			out[off] = byte(v)
			out[off+1] = out[off+1]&0xF0 | byte(v>>8)&0x0F
		} else {
			out[off] = out[off]&0x0F | byte(v<<4)
			out[off+1] = byte(v >> 4)
		}
	}
	return out
}

func volumeEntry(label string) []byte {
	e := make([]byte, 32)
	copy(e, padName(label, 11))
	e[11] = 0x08 // volume label
	binary.LittleEndian.PutUint16(e[24:], dosDate1980)
	return e
}

// dirEntries are a file's long-name entries (last part first, as VFAT
// stores them) followed by its 8.3 entry.
func dirEntries(name string, serial, first, size int) [][]byte {
	short := shortName(name, serial)
	sum := shortChecksum(short)
	units := utf16.Encode([]rune(name))
	parts := (len(units) + 12) / 13
	var out [][]byte
	for p := parts; p >= 1; p-- {
		out = append(out, longEntry(units, p, parts, sum))
	}
	e := make([]byte, 32)
	copy(e, short)
	e[11] = 0x20 // archive
	le := binary.LittleEndian
	le.PutUint16(e[16:], dosDate1980) // created
	le.PutUint16(e[18:], dosDate1980) // accessed
	le.PutUint16(e[24:], dosDate1980) // modified
	le.PutUint16(e[26:], uint16(first))
	le.PutUint32(e[28:], uint32(size))
	return append(out, e)
}

// longEntry is part p (1-based) of a long name: 13 UTF-16 units, the
// name ending in a NUL and then 0xFFFF padding.
func longEntry(units []uint16, p, parts int, sum byte) []byte {
	chunk := make([]uint16, 13)
	for i := range chunk {
		switch j := (p-1)*13 + i; {
		case j < len(units):
			chunk[i] = units[j]
		case j == len(units):
			chunk[i] = 0
		default:
			chunk[i] = 0xFFFF
		}
	}
	e := make([]byte, 32)
	e[0] = byte(p)
	if p == parts {
		e[0] |= 0x40 // the last part
	}
	e[11], e[13] = 0x0F, sum
	le := binary.LittleEndian
	for i, u := range chunk {
		switch {
		case i < 5:
			le.PutUint16(e[1+2*i:], u)
		case i < 11:
			le.PutUint16(e[14+2*(i-5):], u)
		default:
			le.PutUint16(e[28+2*(i-11):], u)
		}
	}
	return e
}

// shortName is a file's 8.3 name: a ~N tail keeps those of long names
// distinct (serial numbers the files).
func shortName(name string, serial int) []byte {
	base, ext, _ := strings.Cut(strings.ToUpper(name), ".")
	keep := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_!#$%&'()@^`{}~", r) {
				return r
			}
			return -1
		}, s)
	}
	base, ext = keep(base), keep(ext)
	tail := fmt.Sprintf("~%d", serial)
	base = base[:min(len(base), 8-len(tail))] + tail
	return []byte(padName(base, 8) + padName(ext[:min(len(ext), 3)], 3))
}

func shortChecksum(short []byte) byte {
	var sum byte
	for _, c := range short[:11] {
		sum = (sum&1)<<7 + sum>>1 + c
	}
	return sum
}

func padName(s string, n int) string { return s + strings.Repeat(" ", n-len(s)) }
