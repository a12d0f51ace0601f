package mcptoken

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

func TestLoadOrCreateMakesOneTokenPerServerAndKeepsIt(t *testing.T) {
	state := t.TempDir()
	roots := []string{"/ws/b", "/ws/a"}
	file := Generated(state, "127.0.0.1:8765", roots)
	if dir, name := filepath.Split(file.Path()); dir != filepath.Join(state, "mcp")+string(filepath.Separator) ||
		!strings.HasPrefix(name, "http-127.0.0.1_8765-") || !strings.HasSuffix(name, ".token") {
		t.Errorf("path = %s", file.Path())
	}
	if again := Generated(state, "127.0.0.1:8765", []string{"/ws/a", "/ws/b", "/ws/a"}); again.Path() != file.Path() {
		t.Errorf("the same roots in another order name another file: %s", again.Path())
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got { // servers starting at once agree on one token
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := LoadOrCreate(file)
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
	st, err := os.Stat(file.Path())
	if err != nil || runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", st.Mode(), err)
	}
	if dir, _ := os.Stat(filepath.Dir(file.Path())); runtime.GOOS != "windows" && dir.Mode().Perm() != 0o700 {
		t.Errorf("token folder mode %v", dir.Mode())
	}
	if again, err := LoadOrCreate(file); err != nil || again != got[0] {
		t.Errorf("a restart got %q %v", again, err)
	}
	if other, _ := LoadOrCreate(Generated(state, "127.0.0.1:9000", roots)); other == got[0] {
		t.Error("two addresses share a token")
	}
	if other, _ := LoadOrCreate(Generated(state, "127.0.0.1:8765", []string{"/ws/a"})); other == got[0] {
		t.Error("a server of other workspaces on the same address has the token")
	}
	service := Service(state, "127.0.0.1:8765")
	if service.Path() != filepath.Join(state, "mcp", "service-http-127.0.0.1_8765.token") {
		t.Errorf("the service's token: %s", service.Path())
	}
	if tok, _ := LoadOrCreate(service); tok == got[0] || len(tok) != 43 {
		t.Errorf("the service's token %q", tok)
	}
}

func TestLoadOrCreateRefusesWhatOthersCouldHaveWritten(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes and links are unix's")
	}
	state := t.TempDir()
	open := Generated(state, "open", nil)
	os.MkdirAll(filepath.Dir(open.Path()), 0o700)
	os.WriteFile(open.Path(), []byte("guessable\n"), 0o644)
	if _, err := LoadOrCreate(open); coded.Of(err, "").Code != coded.TokenInsecure || !contains(err, "other users") {
		t.Errorf("a world-readable token: %v", err)
	}
	target := filepath.Join(state, "target")
	os.WriteFile(target, []byte(strings.Repeat("a", 43)+"\n"), 0o600)
	link := Generated(state, "link", nil)
	os.Symlink(target, link.Path())
	if _, err := LoadOrCreate(link); coded.Of(err, "").Code != coded.StateFileLink {
		t.Errorf("a link: %v", err)
	}
}

// The operator's --token-file: only the owner may use it, and the token
// carries at least 128 bits as its alphabet counts them.
func TestReadRefusesTokenFilesOthersCanReadAndWeakTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	strong := strings.Repeat("0123456789abcdef", 2)
	for name, tc := range map[string]struct {
		content string
		mode    os.FileMode
		rule    string // "" accepted
	}{
		"hex32":        {strong + "\n", 0o600, ""},
		"hex31":        {strong[:31], 0o600, "min_bits"},
		"b64-22":       {"AbCdEfGhIjKlMnOpQrStUv", 0o400, ""},
		"b64-21-pad":   {"AbCdEfGhIjKlMnOpQrStU==", 0o600, "min_bits"},
		"one-byte":     {"x", 0o600, "min_bits"},
		"empty":        {" \n", 0o600, "one_token"},
		"space":        {"correct horse battery staple", 0o600, "b64token"},
		"group-read":   {strong, 0o640, "owner_only"},
		"world-read":   {strong, 0o644, "owner_only"},
		"group-write":  {strong, 0o620, "owner_only"},
		"two-tokens":   {strings.Repeat(strong+"\n", 200), 0o600, "one_token"},
		"b64url-43pad": {strings.Repeat("A-_z", 10) + "abc=", 0o600, ""},
	} {
		if runtime.GOOS == "windows" && tc.rule == "owner_only" {
			continue
		}
		tok, err := Read(write(name, tc.content, tc.mode))
		c := coded.Of(err, "")
		switch {
		case tc.rule == "" && (err != nil || tok != strings.TrimSpace(tc.content)):
			t.Errorf("%s: %q %v", name, tok, err)
		case tc.rule != "" && (c == nil || c.Code != coded.TokenInsecure || c.Details["rule"] != tc.rule):
			t.Errorf("%s: want %s refused, got %q %v", name, tc.rule, tok, err)
		}
	}
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
