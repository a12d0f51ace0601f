// Package mcptoken keeps the bearer token of sbf's MCP server over HTTP.
// Every HTTP caller must send it, loopback included: a process that can
// reach the port (another user's, a guest through QEMU's host alias, a web
// page through DNS rebinding) is not thereby the operator. Unless the
// operator names a file (--token-file), sbf makes one per server, readable
// only by its user, and reuses it: a server is its listen address and the
// workspace roots it serves, so a client configured once keeps working
// across restarts of that server, and a token given out for it never
// authorises a later server on the same address that serves other
// workspaces. Deleting the file makes the next server generate a new token.
package mcptoken

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/ownfile"
)

// Bytes is the entropy of a token sbf generates: 32 random bytes (256 bits).
const Bytes = 32

// MinBits is the least a token must carry, counted as MinBits says.
const MinBits = 128

// maxFile bounds a token file's read: a token is a line.
const maxFile = 4 << 10

// Generated is the file holding the token sbf generates for the server
// listening on addr and serving roots, below sbf's host state folder:
// mcp/http-ADDR-TAG.token, TAG naming the set of roots.
func Generated(stateDir, addr string, roots []string) ownfile.File {
	set := slices.Clone(roots)
	slices.Sort(set)
	sum := sha256.Sum256([]byte(strings.Join(slices.Compact(set), "\x00")))
	return tokenFile(stateDir, "http-"+fileName(addr)+"-"+hex.EncodeToString(sum[:6]))
}

// Service is the file holding the token of the server `sbf service
// install --http ADDR` registers (one service runs per user):
// mcp/service-http-ADDR.token.
func Service(stateDir, addr string) ownfile.File {
	return tokenFile(stateDir, "service-http-"+fileName(addr))
}

func tokenFile(stateDir, name string) ownfile.File {
	return ownfile.At(stateDir).Private("mcp").File(name + ".token")
}

func fileName(addr string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, addr)
}

// New is a fresh token: URL-safe base64 of Bytes random bytes.
func New() (string, error) {
	b := make([]byte, Bytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the MCP bearer token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// LoadOrCreate returns the token in f, generating it first (mode 0600, in
// a folder of mode 0700) when there is none; of servers starting at once,
// all get the first one's. The file is sbf's own (package ownfile): a
// link or anything but a regular file is refused, and so is one others
// may read.
func LoadOrCreate(f ownfile.File) (string, error) {
	if tok, err := readOwn(f); !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	tok, err := New()
	if err != nil {
		return "", err
	}
	if err := f.Dir.Make(); err != nil {
		return "", fmt.Errorf("making a folder for the MCP bearer token: %w", err)
	}
	err = f.Dir.WriteNew(f.Name, []byte(tok+"\n"), 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readOwn(f)
	}
	if err != nil {
		return "", fmt.Errorf("writing the MCP bearer token: %w", err)
	}
	return tok, nil
}

func readOwn(f ownfile.File) (string, error) {
	fh, err := f.OpenFile(os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	tok, err := read(fh, f.Path())
	if err != nil {
		return "", fmt.Errorf("%w; remove it and sbf makes a new one", err)
	}
	return tok, nil
}

// Read reads a token file the operator named (--token-file), as named
// (a link the operator made is theirs): a regular file only its owner may
// read or write, holding one token of at least MinBits.
func Read(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the MCP bearer token: %w", err)
	}
	defer fh.Close()
	return read(fh, path)
}

// read reads an open token file: a regular file, only its owner's on
// Unix, holding one strong token.
func read(fh *os.File, path string) (string, error) {
	info, err := fh.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the MCP bearer token: %w", err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("the MCP bearer token %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm()&0o077 != 0 {
		return "", insecure(path, "owner_only", "the MCP bearer token file %s can be used by other users (mode %v): "+
			"a token others can read lets them in; make it the owner's alone (chmod 600 %s)", path,
			info.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxFile+1))
	if err != nil {
		return "", fmt.Errorf("reading the MCP bearer token: %w", err)
	}
	if len(data) > maxFile {
		return "", insecure(path, "one_token", "the MCP bearer token file %s holds more than %d bytes: it must "+
			"hold one token", path, maxFile)
	}
	tok := strings.TrimSpace(string(data))
	return tok, Check(tok, path)
}

// Check applies the strength rule to a token read from path. A bearer
// token is RFC 6750's b64token (letters, digits, - . _ ~ + /, then any
// '='), and must carry MinBits, counted as random characters of its
// alphabet carry them: 4 bits a character when all are hex digits, else
// 6 ('=' padding counts nothing). So 32 hex digits, or 22 characters of
// base64, are the least accepted. sbf cannot see how random a token is;
// `openssl rand -hex 32` makes one that is.
func Check(tok, path string) error {
	body := strings.TrimRight(tok, "=")
	if body == "" {
		return insecure(path, "one_token", "the MCP bearer token file %s is empty", path)
	}
	hexOnly := true
	for _, r := range body {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'f', r >= 'A' && r <= 'F':
		case r >= 'g' && r <= 'z', r >= 'G' && r <= 'Z', strings.ContainsRune("-._~+/", r):
			hexOnly = false
		default:
			return insecure(path, "b64token", "the MCP bearer token in %s has a character a bearer token cannot "+
				"carry (RFC 6750: letters, digits, - . _ ~ + / and trailing =)", path)
		}
	}
	bits := 6 * len(body)
	if hexOnly {
		bits = 4 * len(body)
	}
	if bits < MinBits {
		return insecure(path, "min_bits", "the MCP bearer token in %s carries at most %d bits; it must carry %d: "+
			"at least 32 hex digits or 22 base64 characters, random (openssl rand -hex 32 makes one)", path, bits,
			MinBits)
	}
	return nil
}

func insecure(path, rule, format string, args ...any) error {
	return coded.New(coded.TokenInsecure, map[string]any{"path": path, "rule": rule}, format, args...)
}
