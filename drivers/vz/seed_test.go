package vz

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

func testSeed() Seed {
	return Seed{InstanceID: "sbf-0123abcd-api-1f2e", Hostname: "sbf-0123abcd-api", User: "sbf",
		PublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDb5 sbf-vz\n"}
}

// readFAT is an independent reader of the images fatImage writes: it
// follows the boot sector's geometry, the long names and the cluster
// chains, so a layout mistake shows up as a wrong or missing file.
func readFAT(t *testing.T, img []byte) (label string, files map[string]string) {
	t.Helper()
	le := binary.LittleEndian
	if img[510] != 0x55 || img[511] != 0xAA {
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

func TestSeedImageHoldsTheNoCloudFiles(t *testing.T) {
	s := testSeed()
	s.PublicKey = strings.Repeat("k", 700) // user-data then spans two clusters
	img, err := s.Image()
	if err != nil {
		t.Fatal(err)
	}
	if len(img) != 1474560 {
		t.Fatalf("image is %d bytes", len(img))
	}
	label, files := readFAT(t, img)
	if label != "CIDATA" {
		t.Errorf("label %q", label)
	}
	if files["meta-data"] != s.metaData() || files["user-data"] != s.userData() || len(files) != 2 {
		t.Errorf("files %q", files)
	}
}

func TestSeedUserData(t *testing.T) {
	got := testSeed().userData()
	want := `#cloud-config
hostname: "sbf-0123abcd-api"
users:
  - name: sbf
    shell: /bin/bash
    sudo: "ALL=(ALL) NOPASSWD:ALL"
    lock_passwd: true
    ssh_authorized_keys:
      - "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDb5 sbf-vz"
ssh_pwauth: false
`
	if got != want {
		t.Errorf("user-data:\n%s\nwant:\n%s", got, want)
	}
	if meta := testSeed().metaData(); meta != "instance-id: \"sbf-0123abcd-api-1f2e\"\nlocal-hostname: \"sbf-0123abcd-api\"\n" {
		t.Errorf("meta-data:\n%s", meta)
	}
}

func TestSeedRefusesBadUsers(t *testing.T) {
	for _, u := range []string{"", "Root", "1abc", "a b", strings.Repeat("a", 33)} {
		s := testSeed()
		s.User = u
		if _, err := s.Image(); err == nil {
			t.Errorf("user %q accepted", u)
		}
	}
}

func TestShortNamesAreDistinctAndChecksummed(t *testing.T) {
	a, b := shortName("user-data", 1), shortName("user-date", 2)
	if string(a) != "USER-D~1   " || string(b) != "USER-D~2   " {
		t.Errorf("short names %q %q", a, b)
	}
	// The checksum from the VFAT specification's example algorithm.
	if got := shortChecksum([]byte("README  TXT")); got != 0x73 {
		t.Errorf("checksum %#x", got)
	}
}

// TestSeedImageAsLinuxToolsSeeIt asks the tools cloud-init itself relies
// on: blkid finds the seed by TYPE and LABEL; fsck.fat and mtools, when
// installed, check the filesystem and read the files back.
func TestSeedImageAsLinuxToolsSeeIt(t *testing.T) {
	img, err := testSeed().Image()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cidata.img")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	ran := 0
	if blkid, err := exec.LookPath("blkid"); err == nil {
		ran++
		out, err := exec.Command(blkid, "-p", "-o", "export", path).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "TYPE=vfat") || !strings.Contains(string(out), "LABEL=CIDATA") {
			t.Errorf("blkid: %v\n%s", err, out)
		}
	}
	if fsck, err := exec.LookPath("fsck.fat"); err == nil {
		ran++
		if out, err := exec.Command(fsck, "-n", "-v", path).CombinedOutput(); err != nil {
			t.Errorf("fsck.fat: %v\n%s", err, out)
		}
	}
	if mtype, err := exec.LookPath("mtype"); err == nil {
		ran++
		out, err := exec.Command(mtype, "-i", path, "::user-data").CombinedOutput()
		if err != nil || string(out) != testSeed().userData() {
			t.Errorf("mtype: %v\n%s", err, out)
		}
	}
	if ran == 0 {
		t.Skip("none of blkid, fsck.fat (dosfstools), mtype (mtools) is installed")
	}
}
