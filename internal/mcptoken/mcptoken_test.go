package mcptoken

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestLoadOrCreateMakesOneTokenAndKeepsIt(t *testing.T) {
	state := t.TempDir()
	path := Path(state, "127.0.0.1:8765")
	if path != filepath.Join(state, "mcp", "http-127.0.0.1_8765.token") {
		t.Errorf("path = %s", path)
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got { // servers starting at once agree on one token
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := LoadOrCreate(path)
			if err != nil {
				t.Error(err)
			}
			got[i] = tok
		}()
	}
	wg.Wait()
	for _, tok := range got[1:] {
		if tok != got[0] {
			t.Fatalf("tokens differ: %q", got)
		}
	}
	if len(got[0]) != 43 || strings.ContainsAny(got[0], "+/=") {
		t.Errorf("token %q: want 43 URL-safe characters (32 bytes)", got[0])
	}
	st, err := os.Stat(path)
	if err != nil || runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", st.Mode(), err)
	}
	if dir, _ := os.Stat(filepath.Dir(path)); runtime.GOOS != "windows" && dir.Mode().Perm() != 0o700 {
		t.Errorf("token folder mode %v", dir.Mode())
	}
	if again, err := LoadOrCreate(path); err != nil || again != got[0] {
		t.Errorf("a restart got %q %v", again, err)
	}
	if other, _ := LoadOrCreate(Path(state, "127.0.0.1:9000")); other == got[0] {
		t.Error("two addresses share a token")
	}
}

func TestLoadOrCreateRefusesWhatOthersCouldHaveWritten(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes and links are unix's")
	}
	dir := t.TempDir()
	open := filepath.Join(dir, "open.token")
	os.WriteFile(open, []byte("guessable\n"), 0o644)
	if _, err := LoadOrCreate(open); err == nil || !strings.Contains(err.Error(), "other users") {
		t.Errorf("a world-readable token: %v", err)
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("theirs\n"), 0o600)
	link := filepath.Join(dir, "link.token")
	os.Symlink(target, link)
	if _, err := LoadOrCreate(link); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a link: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	if _, err := Read(empty); err == nil {
		t.Error("an empty token file was accepted")
	}
}
