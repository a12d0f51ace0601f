package egress

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/cryptobyte"
)

const (
	recordTypeHandshake  = 0x16
	handshakeClientHello = 1
	extServerName        = 0
	maxRecordPayload     = 1<<14 + 2048 // TLSCiphertext's bound; a plaintext record is smaller
	// maxClientHello bounds what is buffered to find the SNI. Hellos with
	// post-quantum key shares are a few KiB; 64 KiB leaves room without
	// letting a client make the proxy hold much.
	maxClientHello = 64 << 10
)

// errNotClientHello is a first record that is TLS but not a ClientHello.
var errNotClientHello = errors.New("first TLS handshake message is not a ClientHello")

// readClientHello reads the first bytes a client sends in a tunnel. When
// they start a TLS handshake record it reads the records that carry the
// whole ClientHello (a hello may span records) and returns its body. raw is
// every byte read, to be forwarded unchanged; isTLS is false when the first
// byte is not a handshake record (then raw is that one byte).
func readClientHello(r io.Reader) (raw, hello []byte, isTLS bool, err error) {
	first := make([]byte, 1)
	if _, err := io.ReadFull(r, first); err != nil {
		return nil, nil, false, err
	}
	if first[0] != recordTypeHandshake {
		return first, nil, false, nil
	}
	raw = first
	var msg []byte
	for {
		var payload []byte
		raw, payload, err = readRecord(r, raw)
		if err != nil {
			return raw, nil, true, err
		}
		msg = append(msg, payload...)
		if len(msg) < 4 {
			continue
		}
		if msg[0] != handshakeClientHello {
			return raw, nil, true, errNotClientHello
		}
		n := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if n > maxClientHello {
			return raw, nil, true, fmt.Errorf("ClientHello of %d bytes is over the %d-byte limit", n, maxClientHello)
		}
		if len(msg) >= 4+n {
			return raw, msg[4 : 4+n], true, nil
		}
	}
}

// readRecord reads one handshake record whose type byte is already the last
// byte of raw (the first record) or still to come (later records).
func readRecord(r io.Reader, raw []byte) ([]byte, []byte, error) {
	hdrLen := 5
	if len(raw) == 1 { // the type byte of the first record was read already
		hdrLen = 4
	}
	hdr := make([]byte, hdrLen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return raw, nil, fmt.Errorf("reading a TLS record header: %w", err)
	}
	raw = append(raw, hdr...)
	h := raw[len(raw)-5:]
	if h[0] != recordTypeHandshake {
		return raw, nil, errors.New("ClientHello interrupted by a non-handshake TLS record")
	}
	if h[1] != 3 {
		return raw, nil, fmt.Errorf("TLS record version %d.%d is not 3.x", h[1], h[2])
	}
	n := int(h[3])<<8 | int(h[4])
	if n == 0 || n > maxRecordPayload || len(raw)+n > maxClientHello+1024 {
		return raw, nil, fmt.Errorf("TLS record length %d is out of bounds", n)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return raw, nil, fmt.Errorf("reading a TLS record: %w", err)
	}
	return append(raw, payload...), payload, nil
}

// parseSNI returns the host_name of a ClientHello body's server_name
// extension, "" when the hello has none.
func parseSNI(hello []byte) (string, error) {
	s := cryptobyte.String(hello)
	var sessionID, suites, compression, exts cryptobyte.String
	if !s.Skip(2+32) || !s.ReadUint8LengthPrefixed(&sessionID) ||
		!s.ReadUint16LengthPrefixed(&suites) || !s.ReadUint8LengthPrefixed(&compression) {
		return "", errors.New("malformed ClientHello")
	}
	if s.Empty() {
		return "", nil // no extensions at all
	}
	if !s.ReadUint16LengthPrefixed(&exts) || !s.Empty() {
		return "", errors.New("malformed ClientHello extensions")
	}
	sni, seen := "", false
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) {
			return "", errors.New("malformed ClientHello extension")
		}
		if typ != extServerName {
			continue
		}
		if seen {
			return "", errors.New("ClientHello repeats the server_name extension")
		}
		seen = true
		name, err := parseServerName(data)
		if err != nil {
			return "", err
		}
		sni = name
	}
	return sni, nil
}

// parseServerName reads a server_name extension's list (RFC 6066 §3): at
// most one host_name, ASCII, no NUL.
func parseServerName(data cryptobyte.String) (string, error) {
	var list cryptobyte.String
	if !data.ReadUint16LengthPrefixed(&list) || !data.Empty() || list.Empty() {
		return "", errors.New("malformed server_name extension")
	}
	host := ""
	for !list.Empty() {
		var typ uint8
		var name cryptobyte.String
		if !list.ReadUint8(&typ) || !list.ReadUint16LengthPrefixed(&name) {
			return "", errors.New("malformed server_name entry")
		}
		if typ != 0 {
			continue
		}
		if host != "" || len(name) == 0 {
			return "", errors.New("server_name has an empty or second host_name")
		}
		for _, c := range name {
			if c == 0 || c >= 0x80 {
				return "", errors.New("server_name host_name is not ASCII")
			}
		}
		host = string(name)
	}
	return host, nil
}

// tlsAlertUnrecognizedName is a fatal unrecognized_name alert record, what a
// TLS client shows for an SNI the proxy refused.
var tlsAlertUnrecognizedName = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x70}
