package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Bounds on what an upstream sends before its response body.
const (
	maxResponseHead = 256 << 10
	maxInterim      = 8
)

// hopHeaders are the hop-by-hop fields (RFC 9110 §7.6.1) a proxy drops.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// forward carries one absolute-URI request over a fresh upstream connection
// and reports whether the client connection may carry another request.
func (s *session) forward(ctx context.Context, req *http.Request) bool {
	e := Entry{Method: req.Method, Host: req.URL.Host}
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		s.refuse(e, &refusal{code: http.StatusBadRequest,
			reason: "a proxied request needs an absolute http:// URI (https goes through CONNECT)"})
		return false
	}
	host, port, err := hostPort(req.URL.Hostname(), req.URL.Port(), 80)
	if err != nil {
		s.refuse(e, &refusal{code: http.StatusBadRequest, reason: "request URI: " + err.Error()})
		return false
	}
	e.Host, e.Port = host, port
	up, addr, err := s.dial(ctx, host, port)
	if err != nil {
		s.refuse(e, err)
		return false
	}
	s.setUpstream(up)
	defer s.setUpstream(nil)
	defer up.Close()
	e.Addr = addr.String()
	upM := &meter{w: up, act: s.act}
	downM := &meter{w: s.client, act: s.act}
	keep, err := s.exchange(req, up, upM, downM)
	e.BytesUp, e.BytesDown = upM.n.Load(), downM.n.Load()
	e.Decision = Allowed
	if err != nil {
		e.Reason = "upstream exchange: " + err.Error()
	}
	s.p.log(e)
	return keep && err == nil
}

// exchange writes req upstream and the response back. The request goes out
// with its URI's authority as Host (a different Host header is not passed
// on) and without hop-by-hop fields; the response comes back as HTTP/1.1.
func (s *session) exchange(req *http.Request, up io.Reader, upM, downM *meter) (bool, error) {
	keep := !req.Close && req.ProtoAtLeast(1, 1)
	expect100 := strings.EqualFold(req.Header.Get("Expect"), "100-continue")
	req.Header.Del("Expect")
	removeHopHeaders(req.Header)
	req.RequestURI, req.Host, req.Close = "", "", true
	if expect100 && req.ContentLength != 0 {
		// Carrying 100 Continue end to end is not worth it here: the client
		// gets it at once and sends its body, which goes upstream as it comes.
		io.WriteString(downM, "HTTP/1.1 100 Continue\r\n\r\n")
	}
	if err := req.Write(upM); err != nil {
		s.reply(http.StatusBadGateway, "sending the request upstream failed")
		return false, err
	}
	var head []byte
	lim := &headLimiter{r: up, remaining: maxResponseHead, capture: &head}
	br := bufio.NewReader(lim)
	resp, interim, err := readFinalResponse(br, lim, req, downM)
	if err != nil {
		s.reply(http.StatusBadGateway, "reading the upstream response failed")
		return false, err
	}
	defer resp.Body.Close()
	// http.ReadResponse deletes a Connection field that says "close", and
	// with it the names of other hop-by-hop fields it lists.
	for _, name := range connectionTokens(head, interim) {
		resp.Header.Del(name)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		s.reply(http.StatusBadGateway, "the upstream switched protocols, which plain proxying does not carry")
		return false, errors.New("upstream answered 101 Switching Protocols")
	}
	removeHopHeaders(resp.Header)
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	resp.Close = !keep
	// Response.Write closes a body of unknown length by closing the connection.
	if resp.ContentLength < 0 && !isChunked(resp.TransferEncoding) {
		keep = false
	}
	return keep, writeGathered(downM, resp, br)
}

// writeGathered writes resp to the client in as few writes as its body
// allows. Response.Write writes its head a field at a time: a dozen
// writes, each a segment on a TCP_NODELAY socket and a packet an emulated
// guest takes in one by one. Here they are gathered with the body's first
// bytes, and what is gathered goes out before any read of the body that
// would wait for upstream, so a slow stream's bytes are never held.
func writeGathered(down io.Writer, resp *http.Response, upstream *bufio.Reader) error {
	out := gatherers.Get().(*bufio.Writer)
	out.Reset(down)
	defer func() { out.Reset(nil); gatherers.Put(out) }()
	resp.Body = flushBeforeWait{ReadCloser: resp.Body, out: out, in: upstream}
	// Write alone: as an io.ReaderFrom, out would read the body into its
	// own buffer, which a flush before that read would leave misplaced.
	err := resp.Write(struct{ io.Writer }{out})
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}

var gatherers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, copyBufSize) }}

// flushBeforeWait is a response body that writes out what is gathered
// before a read that upstream's buffered bytes cannot serve.
type flushBeforeWait struct {
	io.ReadCloser
	out *bufio.Writer
	in  *bufio.Reader
}

func (f flushBeforeWait) Read(p []byte) (int, error) {
	if f.in.Buffered() == 0 && f.out.Buffered() > 0 {
		if err := f.out.Flush(); err != nil {
			return 0, err
		}
	}
	return f.ReadCloser.Read(p)
}

// readFinalResponse reads the upstream response, passing interim (1xx)
// responses on to the client, and says how many there were.
func readFinalResponse(br *bufio.Reader, lim *headLimiter, req *http.Request,
	down io.Writer) (*http.Response, int, error) {
	for interim := 0; ; interim++ {
		lim.remaining = maxResponseHead
		resp, err := http.ReadResponse(br, req)
		lim.remaining = -1
		if err != nil {
			return nil, 0, err
		}
		if resp.StatusCode < 100 || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, interim, nil
		}
		if interim == maxInterim {
			return nil, 0, fmt.Errorf("more than %d interim (1xx) responses", maxInterim)
		}
		if err := resp.Write(down); err != nil {
			return nil, 0, err
		}
	}
}

// connectionTokens lists the field names in the Connection fields of the
// response head number i in raw (interim responses come first).
func connectionTokens(raw []byte, i int) []string {
	heads := strings.SplitN(string(raw), "\r\n\r\n", i+2)
	if len(heads) < i+2 {
		return nil
	}
	var names []string
	for _, line := range strings.Split(heads[i], "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "Connection") {
			continue
		}
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				names = append(names, name)
			}
		}
	}
	return names
}

func isChunked(te []string) bool { return len(te) > 0 && te[0] == "chunked" }
