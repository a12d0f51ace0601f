package sandbox

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/egress"
)

// logsBackend keeps a proxy log and a host guard log in dir.
type logsBackend struct {
	drivers.Driver
	dir string
}

func (b logsBackend) EgressLog(string) string { return filepath.Join(b.dir, egress.LogName) }
func (b logsBackend) GuardLog(string) string  { return filepath.Join(b.dir, egress.GuardLogName) }

// The egress log shows the proxy's decisions and the host guard's
// refusals together, oldest first.
func TestEgressLogMergesTheHostGuardsRefusals(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	write := func(name string, entries ...egress.Entry) {
		l, err := egress.OpenLog(filepath.Join(dir, name), 0)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for _, e := range entries {
			l.Write(e)
		}
	}
	write(egress.LogName, egress.Entry{Time: at, Host: "pypi.org", Decision: egress.Allowed},
		egress.Entry{Time: at.Add(2 * time.Second), Host: "evil.example", Decision: egress.Denied})
	write(egress.GuardLogName, egress.Entry{Time: at.Add(time.Second), Host: "127.0.0.1", Port: 8765,
		Decision: egress.Denied, Method: "connect"})
	tgt := &Target{Open: func() (drivers.Driver, error) { return logsBackend{dir: dir}, nil }}
	got, err := tgt.EgressLog(0)
	if err != nil || len(got) != 3 || got[0].Host != "pypi.org" || got[1].Port != 8765 || got[2].Host != "evil.example" {
		t.Fatalf("merged log = %+v, %v", got, err)
	}
	if got, _ := tgt.EgressLog(2); len(got) != 2 || got[0].Port != 8765 {
		t.Errorf("the last two = %+v", got)
	}
}
