package cloudinit

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers/cloudinit/cloudinittest"
)

func testSeed() Seed {
	return Seed{InstanceID: "sbf-0123abcd-api-1f2e", Hostname: "sbf-0123abcd-api", User: "sbf",
		PublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDb5 sbf-vz\n"}
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
	label, files := cloudinittest.Read(t, img)
	if label != "CIDATA" {
		t.Errorf("label %q", label)
	}
	if files["meta-data"] != s.MetaData() || files["user-data"] != s.UserData() || len(files) != 2 {
		t.Errorf("files %q", files)
	}
}

func TestSeedImageWithNetworkConfig(t *testing.T) {
	s := testSeed()
	s.NetworkConfig = "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n"
	img, err := s.Image()
	if err != nil {
		t.Fatal(err)
	}
	_, files := cloudinittest.Read(t, img)
	if files["network-config"] != s.NetworkConfig || files["user-data"] != s.UserData() || len(files) != 3 {
		t.Errorf("files %q", files)
	}
}

// TestSeedImageIsReproducible pins the bytes of a seed: the same seed is
// the same image on every host and every build, and a change to the
// layout shows up here before it reaches a guest.
func TestSeedImageIsReproducible(t *testing.T) {
	img, err := testSeed().Image()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(img)
	if got := hex.EncodeToString(sum[:]); got != "d03f160f40c46948610ed3eb189c51ea692a3f0f4cfca7b33753f02333db6c1f" {
		t.Errorf("the seed image's sha256 is %s: the layout changed", got)
	}
}

func TestSeedUserData(t *testing.T) {
	got := testSeed().UserData()
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
	meta := testSeed().MetaData()
	if meta != "instance-id: \"sbf-0123abcd-api-1f2e\"\nlocal-hostname: \"sbf-0123abcd-api\"\n" {
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

// TestSeedImageAsLinuxToolsSeeIt asks the tools cloud-init itself relies
// on: blkid finds the seed by TYPE and LABEL; fsck.fat and mtools, when
// installed, check the filesystem and read the files back.
func TestSeedImageAsLinuxToolsSeeIt(t *testing.T) {
	s := testSeed()
	s.NetworkConfig = "version: 2\n"
	img, err := s.Image()
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
		for name, want := range map[string]string{"user-data": s.UserData(), "network-config": s.NetworkConfig} {
			out, err := exec.Command(mtype, "-i", path, "::"+name).CombinedOutput()
			if err != nil || string(out) != want {
				t.Errorf("mtype %s: %v\n%s", name, err, out)
			}
		}
	}
	if ran == 0 {
		t.Skip("none of blkid, fsck.fat (dosfstools), mtype (mtools) is installed")
	}
}
