package egress

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLogRotatesAtItsBoundAndReadLogReadsBothFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.log")
	const bound = 1000
	lg, err := OpenLog(path, bound)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		e := Entry{Time: testEpoch.Add(time.Duration(i) * time.Second), Sandbox: "api", Decision: Allowed,
			Method: "CONNECT", Host: "pypi.org", Port: 443, BytesDown: int64(i)}
		if err := lg.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	lg.Close()
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > bound || st.Size() == 0 {
			t.Errorf("%s is %d bytes, bound %d", p, st.Size(), bound)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
	}
	all, err := ReadLog(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 || len(all) >= 40 || all[len(all)-1].BytesDown != 39 {
		t.Fatalf("read %d entries ending %+v, want the newest ones (older ones rotated away)", len(all), all)
	}
	for i := 1; i < len(all); i++ {
		if all[i].BytesDown != all[i-1].BytesDown+1 {
			t.Fatalf("entries out of order across the rotation: %d after %d", all[i].BytesDown, all[i-1].BytesDown)
		}
	}
	tail, _ := ReadLog(path, 3)
	if len(tail) != 3 || tail[0].BytesDown != 37 || !tail[2].Time.Equal(testEpoch.Add(39*time.Second)) {
		t.Errorf("tail 3 = %+v", tail)
	}
}

func TestReadLogSkipsACutLineAndAMissingLogIsEmpty(t *testing.T) {
	dir := t.TempDir()
	if got, err := ReadLog(filepath.Join(dir, "none.log"), 0); err != nil || len(got) != 0 {
		t.Fatalf("missing log: %v %v", got, err)
	}
	path := filepath.Join(dir, "egress.log")
	os.WriteFile(path, []byte(`{"decision":"allowed","host":"a.org"}`+"\n"+`{"decision":"den`), 0o600)
	got, err := ReadLog(path, 0)
	if err != nil || len(got) != 1 || got[0].Host != "a.org" {
		t.Fatalf("got %+v %v", got, err)
	}
}

func TestLogClipsGuestChosenFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.log")
	lg, _ := OpenLog(path, 0)
	lg.Write(Entry{Decision: Denied, Host: strings.Repeat("h", 10000), Reason: "x"})
	lg.Close()
	data, _ := os.ReadFile(path)
	if len(data) > 1000 {
		t.Errorf("a line with a 10000-byte host is %d bytes", len(data))
	}
	if err := lg.Write(Entry{}); err == nil {
		t.Error("writing to a closed log succeeded")
	}
}
