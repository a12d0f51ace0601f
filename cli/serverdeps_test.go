package cli

import (
	"bytes"
	"debug/buildinfo"
	"os/exec"
	"testing"

	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/v1import/leases/v1test"
)

// coldInServer are modules sbf-server must not link: what no tool call
// needs, whose pages every server process maps (issue 42: the binary's
// pages were 29 of the server's 39 MiB after 1,000 calls). v1's SQLite
// importer runs in sbf (TestServerHandsImportV1ToSbf); /metrics is written
// by internal/promtext, not client_golang and its protobuf.
var coldInServer = []string{"modernc.org/sqlite", "modernc.org/libc", "github.com/prometheus/client_golang",
	"google.golang.org/protobuf"}

func TestServerBinaryLinksNoColdModule(t *testing.T) {
	testutil.CoverSources(t) // it runs sbf without a helper that does
	linked := func(bin string) map[string]bool {
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		mods := map[string]bool{}
		for _, d := range info.Deps {
			mods[d.Path] = true
		}
		return mods
	}
	server := linked(serverBinary)
	for _, m := range coldInServer {
		if server[m] {
			t.Errorf("%s links %s, which no MCP tool call needs: move its command or reader out of the "+
				"server (as import-v1 is handed to sbf)", ServerBinary, m)
		}
	}
	if !linked(sbfBinary)["modernc.org/sqlite"] {
		t.Error("sbf does not link modernc.org/sqlite: import-v1, which sbf-server hands to sbf, cannot read v1's leases")
	}
}

// sbf-server's import-v1 is sbf's: handed over, it reads v1's database
// and plans as `sbf import-v1` does.
func TestServerHandsImportV1ToSbf(t *testing.T) {
	ws := newSimWorkspace(t, simSpec)
	w := newV1World(t, v1test.Current, ws.root)
	c := exec.Command(serverBinary, "-C", ws.root, "import-v1", "--dry-run", "--json", "--db", w.db)
	c.Env = append(append([]string{}, ws.env...), "SBF_V1_DRIVERS=lima=sim,hyperv=sim", "SBF_NOW="+v1Now)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("%s import-v1: %v\n%s\n%s", ServerBinary, err, out.String(), errb.String())
	}
	if got := classes(parseV1Report(t, out.String())); got != wantV1Classes {
		t.Errorf("%s import-v1 planned %s, want %s", ServerBinary, got, wantV1Classes)
	}
}
