package egress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
)

// clientHello captures the bytes crypto/tls sends first for serverName.
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		tls.Client(b, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake()
		b.Close()
	}()
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := a.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil || len(out) >= 5 && len(out) >= 5+int(out[3])<<8|int(out[4]) {
			return out
		}
	}
}

func TestReadClientHelloFindsTheSNIAndKeepsTheBytes(t *testing.T) {
	hello := clientHello(t, "PyPI.org")
	raw, body, isTLS, err := readClientHello(bytes.NewReader(hello))
	if err != nil || !isTLS || !bytes.Equal(raw, hello) {
		t.Fatalf("isTLS %v err %v, raw equal %v", isTLS, err, bytes.Equal(raw, hello))
	}
	if sni, err := parseSNI(body); err != nil || sni != "PyPI.org" {
		t.Fatalf("SNI %q %v", sni, err)
	}
}

func TestReadClientHelloAcrossRecords(t *testing.T) {
	hello := clientHello(t, "files.pythonhosted.org")
	body := hello[5:]
	// The same handshake message split over three records.
	var split []byte
	for _, part := range [][]byte{body[:10], body[10:200], body[200:]} {
		split = append(split, 0x16, 3, 1, byte(len(part)>>8), byte(len(part)))
		split = append(split, part...)
	}
	raw, msg, _, err := readClientHello(io.MultiReader(bytes.NewReader(split), bytes.NewReader([]byte("after"))))
	if err != nil || !bytes.Equal(raw, split) {
		t.Fatalf("err %v, raw %d bytes of %d", err, len(raw), len(split))
	}
	if sni, _ := parseSNI(msg); sni != "files.pythonhosted.org" {
		t.Errorf("SNI %q", sni)
	}
}

func TestReadClientHelloOfOtherBytes(t *testing.T) {
	raw, _, isTLS, err := readClientHello(bytes.NewReader([]byte("GET / HTTP/1.1\r\n")))
	if err != nil || isTLS || string(raw) != "G" {
		t.Fatalf("raw %q isTLS %v err %v", raw, isTLS, err)
	}
	for name, in := range map[string][]byte{
		"not a hello":    {0x16, 3, 3, 0, 4, 2, 0, 0, 0},
		"bad version":    {0x16, 9, 9, 0, 4, 1, 0, 0, 0},
		"empty record":   {0x16, 3, 3, 0, 0},
		"huge record":    {0x16, 3, 3, 0xff, 0xff},
		"cut short":      {0x16, 3, 3, 0, 40, 1, 0, 0, 36},
		"alert midway":   {0x16, 3, 3, 0, 2, 1, 0, 0x15, 3, 3, 0, 2, 2, 40},
		"type byte only": {0x16},
	} {
		if _, _, isTLS, err := readClientHello(bytes.NewReader(in)); err == nil || !isTLS {
			t.Errorf("%s: isTLS %v err %v, want a TLS error", name, isTLS, err)
		}
	}
	serverHello := []byte{0x16, 3, 3, 0, 4, 2, 0, 0, 0}
	if _, _, _, err := readClientHello(bytes.NewReader(serverHello)); !errors.Is(err, errNotClientHello) {
		t.Errorf("a ServerHello-typed message: %v", err)
	}
}

func TestParseSNIWithoutExtensions(t *testing.T) {
	body := append([]byte{3, 3}, make([]byte, 32)...)
	body = append(body, 0, 0, 2, 0x13, 0x01, 1, 0)
	if sni, err := parseSNI(body); err != nil || sni != "" {
		t.Errorf("SNI %q %v", sni, err)
	}
	if _, err := parseSNI(body[:20]); err == nil {
		t.Error("a truncated hello parsed")
	}
}

func FuzzReadClientHello(f *testing.F) {
	f.Add(clientHello(f, "pypi.org"))
	f.Add([]byte{0x16, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		raw, body, isTLS, err := readClientHello(bytes.NewReader(in))
		if len(raw) > len(in) || err == nil && isTLS && len(body) > maxClientHello {
			t.Fatalf("raw %d of %d, body %d", len(raw), len(in), len(body))
		}
		if err == nil && isTLS {
			parseSNI(body)
		}
	})
}
