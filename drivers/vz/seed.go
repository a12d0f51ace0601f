package vz

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
)

// seedLabel is the filesystem label cloud-init's NoCloud datasource looks
// for (it accepts "cidata" in either case; FAT labels are upper case).
const seedLabel = "CIDATA"

// Seed is what cloud-init learns on first boot.
type Seed struct {
	InstanceID string
	Hostname   string
	User       string
	PublicKey  string // one authorized_keys line
}

// userData creates the login user with the instance's key and
// passwordless sudo (sbf installs Docker and services through it). The
// "- name:" line is also how sbf's images find the user to put in the
// docker group.
func (s Seed) userData() string {
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

func (s Seed) metaData() string {
	return "instance-id: " + strconv.Quote(s.InstanceID) + "\n" +
		"local-hostname: " + strconv.Quote(s.Hostname) + "\n"
}

// Image is the seed as a FAT filesystem labelled CIDATA.
func (s Seed) Image() ([]byte, error) {
	if !validUser(s.User) {
		return nil, fmt.Errorf("guest user %q: want a lower-case Unix user name", s.User)
	}
	sum := sha256.Sum256([]byte(s.InstanceID))
	return fatImage(seedLabel, binary.BigEndian.Uint32(sum[:4]), []fatFile{
		{Name: "meta-data", Data: []byte(s.metaData())},
		{Name: "user-data", Data: []byte(s.userData())},
	})
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

// newKey writes a fresh ed25519 key pair (path, path.pub) for logging in
// to one instance, and returns the public half as an authorized_keys line.
func newKey(path, comment string) (string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("generating an SSH key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return "", fmt.Errorf("encoding the SSH key: %w", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return "", fmt.Errorf("writing the SSH key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", err
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))) + " " + comment + "\n"
	if err := os.WriteFile(path+".pub", []byte(line), 0o644); err != nil {
		return "", fmt.Errorf("writing the SSH public key: %w", err)
	}
	return line, nil
}
