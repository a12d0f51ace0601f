package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// tunnel serves a CONNECT: check and dial, answer 200, check the client's
// first bytes (TLS ClientHello SNI), then copy both ways until both close.
func (s *session) tunnel(ctx context.Context, req *http.Request) {
	e := Entry{Method: http.MethodConnect, Host: req.URL.Host}
	host, port, err := hostPort(req.URL.Hostname(), req.URL.Port(), 0)
	if err != nil {
		s.refuse(e, &refusal{code: http.StatusBadRequest, reason: "CONNECT target: " + err.Error()})
		return
	}
	e.Host, e.Port = host, port
	up, addr, err := s.dial(ctx, host, port)
	if err != nil {
		s.refuse(e, err)
		return
	}
	s.setUpstream(up)
	defer up.Close()
	e.Addr = addr.String()
	if _, err := io.WriteString(s.client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		e.Decision, e.Reason = Allowed, "client gone before the tunnel opened"
		s.p.log(e)
		return
	}
	s.act.touch()
	e.BytesUp, e.BytesDown, e.Reason = s.splice(host, port, up)
	e.Decision = Allowed
	if e.Reason != "" {
		e.Decision = Denied
	}
	s.p.log(e)
}

// splice copies both ways once the client's first bytes pass firstBytes
// (the server's flow at once), half-closing each side as its peer finishes.
// It returns the bytes each way and the refusal reason, if any.
func (s *session) splice(host string, port int, up net.Conn) (sent, received int64, reason string) {
	upM := &meter{w: up, act: s.act}
	downM := &meter{w: s.client, act: s.act}
	downDone := make(chan struct{})
	go func() {
		defer close(downDone)
		if err := pump(downM, up); err != nil {
			s.client.Close()
			up.Close()
			return
		}
		closeWrite(s.client)
	}()
	reason = s.firstBytes(host, port, upM)
	if reason != "" {
		s.client.Close()
		up.Close()
	} else if err := pump(upM, s.br); err != nil {
		s.client.Close()
		up.Close()
	} else {
		closeWrite(up)
	}
	<-downDone
	return upM.n.Load(), downM.n.Load(), reason
}

// firstBytes reads what the client sends first in the tunnel and judges it:
// a TLS ClientHello must name the CONNECT host (SNI), and port 443 carries
// only TLS. Accepted bytes are forwarded to up; a refusal returns the
// reason (after a TLS alert when the client spoke TLS).
func (s *session) firstBytes(host string, port int, up io.Writer) string {
	if port == 443 {
		s.client.SetReadDeadline(s.p.deadline(s.p.cfg.HeaderTimeout))
	}
	raw, hello, isTLS, err := readClientHello(s.br)
	s.client.SetReadDeadline(time.Time{})
	reason := judgeFirstBytes(host, port, hello, isTLS, err)
	if reason != "" {
		if isTLS {
			s.client.SetWriteDeadline(s.p.deadline(time.Second))
			s.client.Write(tlsAlertUnrecognizedName)
		}
		return reason
	}
	if len(raw) > 0 {
		if _, err := up.Write(raw); err != nil {
			return "" // the upstream is gone: not a policy matter
		}
	}
	return ""
}

func judgeFirstBytes(host string, port int, hello []byte, isTLS bool, err error) string {
	var ne net.Error
	switch {
	case err != nil && isTLS:
		return "malformed TLS ClientHello: " + err.Error()
	case err != nil && errors.As(err, &ne) && ne.Timeout():
		return "no TLS ClientHello in time on port 443"
	case err != nil: // the client closed without sending anything
		return ""
	case !isTLS && port == 443:
		return "port 443 carries only TLS, and the first bytes are not a TLS ClientHello"
	case !isTLS:
		return ""
	}
	sni, err := parseSNI(hello)
	if err != nil {
		return "malformed TLS ClientHello: " + err.Error()
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return "" // an address rule allowed the address; a name would not change it
	}
	if sni == "" {
		return fmt.Sprintf("TLS ClientHello names no server (SNI) for CONNECT host %s", host)
	}
	if NormalizeHost(sni) != host {
		return fmt.Sprintf("TLS server name %q does not match CONNECT host %s", sni, host)
	}
	return ""
}

// refuse answers a refused request and logs it.
func (s *session) refuse(e Entry, err error) {
	var rf *refusal
	if !errors.As(err, &rf) {
		rf = &refusal{code: http.StatusBadGateway, reason: err.Error()}
	}
	s.reply(rf.code, rf.reason)
	e.Decision, e.Reason, e.Addr = Denied, rf.reason, rf.addr
	if rf.failed {
		e.Decision = Failed
	}
	s.p.log(e)
}
