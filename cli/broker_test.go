package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
)

// sbf exec finds a running exec broker from the workspace's identity alone:
// it resolves the root once and reads no spec, overrides or state; the
// broker checks the lease on every command, records the command in the
// history and refuses one whose lease has ended with the code sbf exec
// itself would give.
func TestABrokeredExecReadsNoSpec(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, spec.FileName), simSpec)
	env := map[string]string{"SBF_STATE_HOME": filepath.Join(root, "host"), "GOMAXPROCS": "keep"}
	if r := sbf(t, env, "-C", root, "apply", "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() {
		served <- runIn(ctx, processRoot{}, nil, []string{"-C", root, "exec-broker", "web"}, testGetenv(t, env),
			strings.NewReader(""), io.Discard, io.Discard)
	}()
	defer func() { cancel(); <-served }()
	_, id, err := spec.WorkspaceIdentity(root)
	if err != nil {
		t.Fatal(err)
	}
	sock := (&app{getenv: testGetenv(t, env)}).brokerSocket(id, "web")
	for start := time.Now(); !exists(sock); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("no broker listens at %s", sock)
		}
	}
	before := readcount.Now()
	r := sbf(t, env, "-C", root, "exec", "web", "--json", "--", "echo", "brokered")
	got := readcount.Now().Since(before)
	var res struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || !strings.Contains(res.Stdout, "brokered") {
		t.Fatalf("sbf exec through the broker: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for k, most := range map[readcount.Kind]int64{readcount.Resolve: 1, readcount.SpecLoad: 0,
		readcount.Overrides: 0, readcount.State: 0, readcount.Index: 0} {
		if got.Of(k) > most {
			t.Errorf("a brokered sbf exec read %s %d times, want at most %d (%v)", k, got.Of(k), most, got)
		}
	}
	events, err := sandbox.WorkspaceHistory(root).Read(func(ev sandbox.Event) bool { return ev.Tool == "exec" }, 0)
	if err != nil || len(events) != 1 || !strings.Contains(events[0].Command, "brokered") || events[0].Door != "cli" {
		t.Errorf("the broker's record of the command: %+v %v", events, err)
	}
	if r := sbf(t, env, "-C", root, "destroy", "web", "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r = sbf(t, env, "-C", root, "exec", "web", "--json", "--", "true")
	if r.code != 125 || !strings.Contains(r.stdout+r.stderr, "INSTANCE_TERMINAL") {
		t.Errorf("a command after the lease ended: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
