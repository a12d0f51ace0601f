// Package cloudinittest reads back the seed images package cloudinit
// writes, for tests of the writer and of the drivers that use it.
package cloudinittest

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf16"
)

// Read is a FAT12 reader independent of the writer: it follows the boot
// sector's geometry, the long names and the cluster chains, so a layout
// mistake shows up as a wrong or missing file. It returns the volume
// label and the root folder's files by (long) name.
func Read(t testing.TB, img []byte) (label string, files map[string]string) {
	t.Helper()
	le := binary.LittleEndian
	if len(img) < 512 || img[510] != 0x55 || img[511] != 0xAA {
		t.Fatal("no boot signature")
	}
	sector := int(le.Uint16(img[11:]))
	reserved, nfat, perFAT := int(le.Uint16(img[14:])), int(img[16]), int(le.Uint16(img[22:]))
	rootEntries := int(le.Uint16(img[17:]))
	fat := img[reserved*sector : (reserved+perFAT)*sector]
	if !bytes.Equal(fat, img[(reserved+perFAT)*sector:(reserved+2*perFAT)*sector]) || nfat != 2 {
		t.Fatal("the two FATs differ")
	}
	rootStart := (reserved + nfat*perFAT) * sector
	dataStart := rootStart + rootEntries*32
	next := func(c int) int {
		v := int(le.Uint16(fat[c*3/2:]))
		if c%2 == 1 {
			return v >> 4
		}
		return v & 0xFFF
	}
	files = map[string]string{}
	var long []uint16
	for i := range rootEntries {
		e := img[rootStart+i*32 : rootStart+i*32+32]
		switch {
		case e[0] == 0:
			return label, files
		case e[11] == 0x0F:
			var part []uint16
			for _, r := range [][2]int{{1, 11}, {14, 26}, {28, 32}} {
				for o := r[0]; o < r[1]; o += 2 {
					part = append(part, le.Uint16(e[o:]))
				}
			}
			long = append(part, long...)
		case e[11]&0x08 != 0:
			label = strings.TrimRight(string(e[:11]), " ")
		default:
			name := strings.TrimRight(string(e[:8]), " ")
			if long != nil {
				name, _, _ = strings.Cut(string(utf16.Decode(long)), "\x00")
			}
			long = nil
			var data []byte
			for c := int(le.Uint16(e[26:])); c >= 2 && c < 0xFF8; c = next(c) {
				off := dataStart + (c-2)*sector
				data = append(data, img[off:off+sector]...)
			}
			files[name] = string(data[:le.Uint32(e[28:])])
		}
	}
	return label, files
}
