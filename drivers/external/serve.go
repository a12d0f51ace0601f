package external

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// Plugin is a backend as a plugin program implements it; Serve puts it on the wire.
type Plugin interface {
	Hello(ctx context.Context, h Hello) (HelloResult, error)
	drivers.Driver
	drivers.Validator
	drivers.Labeler
	RecordLease(ctx context.Context, name string, expiresAt time.Time) error
	// SSH makes a running instance's sshd reachable from this host and says where.
	SSH(ctx context.Context, name string) (SSHEndpoint, error)
	Diagnose(ctx context.Context, specs []drivers.Spec) drivers.Diagnosis
}

// maxLine bounds one message; specs and lists are far smaller.
const maxLine = 16 << 20

// Serve answers the requests read from in on out until in ends (sbf closed the pipe or
// went away) or ctx is done, then cancels the calls still running and waits for them.
func Serve(ctx context.Context, in io.Reader, out io.Writer, p Plugin) error {
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	s := &server{out: json.NewEncoder(out), plugin: p, running: map[uint64]context.CancelFunc{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var wg sync.WaitGroup
	defer wg.Wait()
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("reading a request: %w", err)
		}
		if req.Method == MethodCancel {
			s.cancel(req.Params)
			continue
		}
		callCtx, cancel := context.WithCancel(ctx)
		s.track(req.ID, cancel)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.untrack(req.ID)
			s.answer(callCtx, req)
		}()
	}
	cancelAll()
	return sc.Err()
}

type server struct {
	plugin Plugin
	// wmu serialises answers. It is never held with mu: a write may block until sbf
	// reads, and sbf may be waiting for our request loop, which takes mu.
	wmu     sync.Mutex
	out     *json.Encoder
	mu      sync.Mutex // guards running
	running map[uint64]context.CancelFunc
}

func (s *server) track(id uint64, cancel context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running[id] = cancel
}

func (s *server) untrack(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel, ok := s.running[id]; ok {
		cancel()
		delete(s.running, id)
	}
}

func (s *server) cancel(params json.RawMessage) {
	var c Cancel
	if json.Unmarshal(params, &c) == nil {
		s.untrack(c.ID)
	}
}

func (s *server) send(r Response) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.out.Encode(r) // a broken stdout means sbf is gone; the closed stdin ends the loop
}

func (s *server) answer(ctx context.Context, req Request) {
	ctx = drivers.WithProgress(ctx, func(msg string) { s.send(Response{ID: req.ID, Progress: msg}) })
	result, err := s.dispatch(ctx, req)
	resp := Response{ID: req.ID, Done: true}
	if err == nil && result != nil {
		resp.Result, err = json.Marshal(result)
	}
	if err != nil {
		resp.Error = EncodeError(err)
	}
	s.send(resp)
}

// dispatch runs one call on the plugin.
func (s *server) dispatch(ctx context.Context, req Request) (any, error) {
	p := s.plugin
	var n Name
	var sp drivers.Spec
	decode := func(into any) error {
		if err := json.Unmarshal(req.Params, into); err != nil {
			return fmt.Errorf("%s: bad parameters: %w", req.Method, err)
		}
		return nil
	}
	switch req.Method {
	case MethodHello:
		var h Hello
		if err := decode(&h); err != nil {
			return nil, err
		}
		return p.Hello(ctx, h)
	case MethodList:
		return p.List(ctx)
	case MethodCreate, MethodStart, MethodReconfigure, MethodValidate, MethodEnforceEgress:
		if err := decode(&sp); err != nil {
			return nil, err
		}
		switch req.Method {
		case MethodCreate:
			return nil, p.Create(ctx, sp)
		case MethodStart:
			return nil, p.Start(ctx, sp)
		case MethodReconfigure:
			return nil, p.Reconfigure(ctx, sp)
		case MethodEnforceEgress:
			return nil, enforceEgress(ctx, p, sp)
		}
		return nil, p.Validate(ctx, sp)
	case MethodStop, MethodDelete, MethodSSH:
		if err := decode(&n); err != nil {
			return nil, err
		}
		switch req.Method {
		case MethodStop:
			return nil, p.Stop(ctx, n.Name)
		case MethodDelete:
			return nil, p.Delete(ctx, n.Name)
		}
		return p.SSH(ctx, n.Name)
	case MethodMarkSpare:
		var a Spare
		if err := decode(&a); err != nil {
			return nil, err
		}
		return nil, p.MarkSpare(ctx, a.Name, a.Label)
	case MethodClaim:
		var c Claim
		if err := decode(&c); err != nil {
			return nil, err
		}
		return nil, p.Claim(ctx, c.Name, c.Owner)
	case MethodRecordLease:
		var l Lease
		if err := decode(&l); err != nil {
			return nil, err
		}
		return nil, p.RecordLease(ctx, l.Name, l.ExpiresAt)
	case MethodDepartures:
		var ns Names
		if err := decode(&ns); err != nil {
			return nil, err
		}
		if r, ok := p.(drivers.DepartureReporter); ok {
			return r.Departures(ctx, ns.Names)
		}
		return []drivers.Departure{}, nil
	case MethodDiagnose:
		var d Diagnose
		if err := decode(&d); err != nil {
			return nil, err
		}
		return p.Diagnose(ctx, d.Specs), nil
	}
	return nil, fmt.Errorf("unknown method %q", req.Method)
}

// enforceEgress is the plugin's answer when it enforces network policies; one that does
// not refuses every policy, as the engine does for a backend without the capability.
func enforceEgress(ctx context.Context, p Plugin, s drivers.Spec) error {
	if e, ok := p.(drivers.EgressEnforcer); ok {
		return e.EnforceEgress(ctx, s)
	}
	return errors.New("this plugin cannot enforce a network policy outside the guest")
}
