// Package cloudinit writes the NoCloud seed cloud-init reads on a guest's
// first boot: meta-data, user-data and, when given, network-config, in a
// FAT12 filesystem labelled CIDATA. It is plain Go, because neither a Mac
// nor CI has a tool that makes such a filesystem without installing one,
// and it knows no driver: any backend that can attach a raw disk image to
// its guest can hand it this one (vz attaches it as a read-only virtio
// disk).
package cloudinit

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Label is the filesystem label cloud-init's NoCloud datasource looks for
// (it accepts "cidata" in either case; FAT labels are upper case).
const Label = "CIDATA"

// Seed is what cloud-init learns on first boot.
type Seed struct {
	InstanceID string
	Hostname   string
	User       string
	PublicKey  string // one authorized_keys line
	// NetworkConfig is a network-config document (cloud-init's network
	// config version 1 or 2), written as is; empty: none, and the guest
	// configures its network as its image says (DHCP on the first NIC).
	NetworkConfig string
}

// UserData creates the login user with the instance's key and
// passwordless sudo (sbf installs Docker and services through it). The
// "- name:" line is also how sbf's images find the user to put in the
// docker group.
func (s Seed) UserData() string {
	return "#cloud-config\n" +
		"hostname: " + strconv.Quote(s.Hostname) + "\n" +
		"users:\n" +
		"  - name: " + s.User + "\n" +
		"    shell: /bin/bash\n" +
		"    sudo: \"ALL=(ALL) NOPASSWD:ALL\"\n" +
		"    lock_passwd: true\n" +
		"    ssh_authorized_keys:\n" +
		"      - " + strconv.Quote(strings.TrimSpace(s.PublicKey)) + "\n" +
		"ssh_pwauth: false\n"
}

// MetaData names the instance; a new instance id is a first boot to
// cloud-init, which then runs user-data again.
func (s Seed) MetaData() string {
	return "instance-id: " + strconv.Quote(s.InstanceID) + "\n" +
		"local-hostname: " + strconv.Quote(s.Hostname) + "\n"
}

// Image is the seed as a FAT filesystem labelled CIDATA, the same bytes
// for the same seed (the volume id derives from the instance id).
func (s Seed) Image() ([]byte, error) {
	if !validUser(s.User) {
		return nil, fmt.Errorf("guest user %q: want a lower-case Unix user name", s.User)
	}
	files := []fatFile{
		{Name: "meta-data", Data: []byte(s.MetaData())},
		{Name: "user-data", Data: []byte(s.UserData())},
	}
	if s.NetworkConfig != "" {
		files = append(files, fatFile{Name: "network-config", Data: []byte(s.NetworkConfig)})
	}
	sum := sha256.Sum256([]byte(s.InstanceID))
	return fatImage(Label, binary.BigEndian.Uint32(sum[:4]), files)
}

func validUser(u string) bool {
	if u == "" || len(u) > 32 {
		return false
	}
	for i, r := range u {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && (r >= '0' && r <= '9' || r == '-')) {
			return false
		}
	}
	return true
}
