package mcpserver

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/reconcile"
)

// policed is the sim with a network policy's two capabilities: it
// "enforces" any policy and keeps each instance's decisions in logDir.
type policed struct {
	*sim.Driver
	logDir string
}

func (policed) EnforceEgress(context.Context, drivers.Spec) error { return nil }
func (p policed) EgressLog(instance string) string {
	return filepath.Join(p.logDir, instance+".jsonl")
}

// The connections a sandbox's policy refused reach the clients once, as
// one warning per sandbox per pass naming the destinations (bounded, the
// guest chooses them); those from before the server looked are not news.
func TestLoopLogsEgressDenials(t *testing.T) {
	f := newFixture(t, simSpec+"[network]\negress = \"deny\"\n")
	logs := t.TempDir()
	f.wrap = func(d *sim.Driver) reconcile.Driver { return policed{Driver: d, logDir: logs} }
	f.start(Settings{SweepInterval: time.Minute, Session: "local"})
	var heard logSink
	c := heard.listen(t, f)
	setLevel(t, c, mcp.LoggingLevelWarning)
	created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})
	instance := created["backend_instance_name"].(string)
	log, err := egress.OpenLog(policed{logDir: logs}.EgressLog(instance), 0)
	if err != nil {
		t.Fatal(err)
	}
	deny := func(host string, n int) {
		for range n {
			f.clock.Advance(time.Millisecond)
			log.Write(egress.Entry{Time: f.clock.Now(), Decision: egress.Denied, Host: host, Port: 443})
		}
	}
	deny("before.example", 1)
	loopPass(t, f) // the first look: what was there is old
	for i := range 7 {
		deny(fmt.Sprintf("h%d.example", i), i+1)
	}
	log.Write(egress.Entry{Time: f.clock.Now().Add(time.Millisecond), Decision: "allowed", Host: "ok.example"})
	loopPass(t, f)
	loopPass(t, f)                  // nothing new
	got := waitEvents(t, &heard, 2) // a second would be a repeat: waited for, briefly
	if strings.Join(got, " ") != "warning:egress_denied" {
		t.Fatalf("heard %v", got)
	}
	d := heard.msgs[0]["data"].(map[string]any)
	dests := fmt.Sprint(d["destinations"])
	want := "[h6.example:443 ×7 h5.example:443 ×6 h4.example:443 ×5 h3.example:443 ×4 h2.example:443 ×3 2 more]"
	if fmt.Sprint(d["denied"]) != "28" || dests != want || strings.Contains(fmt.Sprint(d), "before.example") {
		t.Errorf("the warning: %v", d)
	}
}
