package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// addSpecSeeds seeds a fuzz target with every TOML file of the spec cases.
func addSpecSeeds(f *testing.F) {
	files, _ := filepath.Glob("../testdata/spec/*.txtar")
	for _, path := range files {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range ar.Files {
			if filepath.Ext(file.Name) == ".toml" {
				f.Add(file.Data)
			}
		}
	}
}

// FuzzLoad feeds arbitrary documents to the loader. It must never panic,
// every error must say where it is, and a valid document's resolved
// config, written back out, must load to the same config.
func FuzzLoad(f *testing.F) {
	addSpecSeeds(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		ws := t.TempDir()
		testutil.WriteFile(t, filepath.Join(ws, FileName), string(doc))
		r, err := Load(Options{Backends: linked, Root: ws, Host: Host{OS: "linux"}})
		var errs Errors
		if err != nil {
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Load returned %T %v, want a non-empty Errors", err, err)
			}
			for _, e := range errs {
				if e.File == "" || e.Message == "" || e.Line < 0 {
					t.Fatalf("error without a place or message: %+v", e)
				}
			}
			return
		}
		cfg := r.Config
		cfg.Leases = nil
		out, err := cfg.TOML()
		if err != nil {
			t.Fatalf("marshal resolved config: %v", err)
		}
		testutil.WriteFile(t, filepath.Join(ws, FileName), string(out))
		again, err := Load(Options{Backends: linked, Root: ws, Host: Host{OS: "linux"}})
		if err != nil {
			t.Fatalf("resolved config does not load back: %v\n%s", err, out)
		}
		again.Config.Leases = nil
		// Secrets render as "***", so the round trip is compared as
		// rendered: everything else must survive it exactly.
		first, _ := json.Marshal(cfg)
		second, _ := json.Marshal(again.Config)
		if !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the config:\nfirst:  %s\nsecond: %s", first, second)
		}
	})
}
