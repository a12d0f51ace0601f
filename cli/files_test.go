package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// sbf cat prints a guest file's bytes, beyond one read's limit too; sbf ls
// lists a guest folder.
func TestCatAndLs(t *testing.T) {
	w := applied(t)
	w.must("exec", "api", "--", "sh", "-c",
		"mkdir -p d/sub && printf 'hello world' > d/a.txt && head -c 5000000 /dev/urandom > d/big")
	if r := w.run(nil, "cat", "api:d/a.txt"); r.code != 0 || r.stdout != "hello world" {
		t.Fatalf("cat: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
	if r := w.run(nil, "cat", "--offset", "6", "--limit", "3", "api:d/a.txt"); r.stdout != "wor" {
		t.Errorf("cat a piece: %q %s", r.stdout, r.stderr)
	}
	r := w.run(nil, "cat", "api:d/big")
	sum := sha256.Sum256([]byte(r.stdout))
	guest := w.run(nil, "exec", "api", "--", "sha256sum", "d/big").stdout
	if len(r.stdout) != 5000000 || !strings.HasPrefix(guest, hex.EncodeToString(sum[:])) {
		t.Errorf("cat of a 5 MB file: %d bytes, sum %x, the guest's %s", len(r.stdout), sum, guest)
	}
	if r := w.run(nil, "cat", "api:d/none"); r.code != 1 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("cat of a missing file: exit %d, %s", r.code, r.stderr)
	}
	if r := w.run(nil, "ls", "api:d"); r.stdout != "a.txt\nbig\nsub/\n" {
		t.Errorf("ls: %q %s", r.stdout, r.stderr)
	}
	var l struct {
		Entries []struct{ Path, Type string }
	}
	if r := w.run(nil, "ls", "-R", "--json", "api:d"); json.Unmarshal([]byte(r.stdout), &l) != nil ||
		len(l.Entries) != 3 || l.Entries[2].Type != "directory" {
		t.Errorf("ls -R --json: %s %s", r.stdout, r.stderr)
	}
	if r := w.run(nil, "ls", "--json", "api:d/a.txt"); r.code != 1 ||
		!strings.Contains(r.stdout, "GUEST_PATH_NOT_DIRECTORY") {
		t.Errorf("ls of a file: exit %d %s", r.code, r.stdout)
	}
}
