// Package mcptoken keeps the bearer token of sbf's MCP server over HTTP.
// Every HTTP caller must send it, loopback included: a process that can
// reach the port (another user's, a guest through QEMU's host alias, a web
// page through DNS rebinding) is not thereby the operator. Unless the
// operator names a file (--token-file), sbf makes one per listen address
// in its state folder, readable only by its user, and reuses it, so a
// client configured once keeps working across restarts; deleting the file
// makes the next server generate a new token.
package mcptoken

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Bytes is the token's entropy: 32 random bytes (256 bits).
const Bytes = 32

// Path is where the generated token of a server listening on addr lives,
// below sbf's host state folder.
func Path(stateDir, addr string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, addr)
	return filepath.Join(stateDir, "mcp", "http-"+name+".token")
}

// New is a fresh token: URL-safe base64 of Bytes random bytes.
func New() (string, error) {
	b := make([]byte, Bytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the MCP bearer token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// LoadOrCreate returns the token in path, generating it first (mode 0600,
// in a folder of mode 0700) when there is none. A file there must be a
// regular file that only its owner can read.
func LoadOrCreate(path string) (string, error) {
	if tok, err := readOwn(path); !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("making a folder for the MCP bearer token: %w", err)
	}
	tok, err := New()
	if err != nil {
		return "", err
	}
	// Written beside, then linked into place: a reader never sees half a
	// token, and of two servers starting at once the second reads the
	// first's.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return "", fmt.Errorf("writing the MCP bearer token: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(tok + "\n")
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("writing the MCP bearer token: %w", werr)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return readOwn(path)
	} else if err != nil {
		return "", fmt.Errorf("writing the MCP bearer token: %w", err)
	}
	return tok, nil
}

// readOwn reads a generated token, refusing a link, anything but a
// regular file, and a file others may read.
func readOwn(path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("the MCP bearer token %s is not a regular file; remove it and sbf makes a new one", path)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the MCP bearer token %s can be read by other users (mode %v); remove it and sbf "+
			"makes a new one", path, st.Mode().Perm())
	}
	return Read(path)
}

// Read reads a token file the operator named (--token-file): its content,
// trimmed, which must not be empty.
func Read(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the MCP bearer token: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("the MCP bearer token file %s is empty", path)
	}
	return tok, nil
}
