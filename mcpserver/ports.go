package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/sandbox"
)

// Exposed ports are this server process's own: each forward listens on
// 127.0.0.1 only, lives in the table below (list_exposed_ports shows it,
// the history records its opening and closing), and ends with its
// sandbox (no new connection once the lease has run out; the sweep closes
// its port) or with the server (Close; a process's listeners end with it).

// CodePortNotExposed is unexpose_port's answer for a port nobody exposed.
const CodePortNotExposed = "PORT_NOT_EXPOSED"

// portSweepInterval is how often the sweep looks for forwards whose
// sandbox ended without a connection noticing.
const portSweepInterval = 10 * time.Second

type exposed struct {
	instanceID string
	root       string // the sandbox's workspace
	fwd        *sandbox.Forward
	created    time.Time
}

// portTable is the server's forwards by instance id and guest port.
type portTable struct {
	mu       sync.Mutex
	byKey    map[string]*exposed
	sweeping bool
	stop     chan struct{}
}

func portKey(id string, port int) string { return id + "/" + strconv.Itoa(port) }

type exposeArgs struct {
	InstanceID string `json:"instance_id"`
	Port       int    `json:"port" jsonschema:"The guest port (a server listening in the sandbox, on its loopback or all addresses)."`
	HostPort   *int   `json:"host_port,omitempty" jsonschema:"The host port, on 127.0.0.1 (default: a free one; the result's host_port)."`
}

type unexposeArgs struct {
	InstanceID string `json:"instance_id"`
	Port       int    `json:"port" jsonschema:"The guest port expose_port forwarded."`
}

type listPortsArgs struct {
	InstanceID string `json:"instance_id,omitempty" jsonschema:"Only this instance's exposed ports (default: all)."`
}

// portResult is a forward as the port tools answer it.
type portResult struct {
	InstanceID        string `json:"instance_id"`
	Port              int    `json:"port"`
	HostPort          int    `json:"host_port" jsonschema:"The port on 127.0.0.1."`
	Host              string `json:"host"`
	URL               string `json:"url"`
	Status            string `json:"status"`
	CreatedAt         string `json:"created_at"`
	Connections       int64  `json:"connections"`
	FailedConnections int64  `json:"failed_connections"`
	BytesIn           int64  `json:"bytes_in"`
	BytesOut          int64  `json:"bytes_out"`
}

type portListResult struct {
	Ports []*portResult `json:"ports" jsonschema:"Each forward as expose_port answers it."`
	Count int           `json:"count"`
}

func (s *Server) exposePort(ctx context.Context, a exposeArgs) (*portResult, error) {
	hostPort := 0
	if a.HostPort != nil {
		hostPort = *a.HostPort
	}
	if err := sandbox.CheckPort("port", a.Port, false); err != nil {
		return nil, err
	}
	if err := sandbox.CheckPort("host_port", hostPort, true); err != nil {
		return nil, err
	}
	_, ws, err := s.instance(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	key := portKey(a.InstanceID, a.Port)
	s.ports.mu.Lock()
	defer s.ports.mu.Unlock()
	if e, ok := s.ports.byKey[key]; ok && !closed(e.fwd) {
		if hostPort != 0 && hostPort != e.fwd.HostPort {
			return nil, newToolError(coded.InvalidArguments, fmt.Sprintf("guest port %d is already exposed on "+
				"host port %d; unexpose it first", a.Port, e.fwd.HostPort),
				map[string]any{"field": "host_port", "host_port": e.fwd.HostPort})
		}
		return exposedJSON(e), nil
	}
	admit := func() error { _, err := s.cfg.Engine.Target(ws, tgt.Sandbox); return err }
	fwd, err := tgt.Forward(ctx, hostPort, a.Port, admit)
	if err != nil {
		return nil, err
	}
	if s.ports.byKey == nil {
		s.ports.byKey = map[string]*exposed{}
	}
	e := &exposed{instanceID: a.InstanceID, root: tgt.Resolved.Root, fwd: fwd, created: s.cfg.Engine.Clock.Now()}
	s.ports.byKey[key] = e
	s.startSweep()
	return exposedJSON(e), nil
}

func closed(f *sandbox.Forward) bool {
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

func exposedJSON(e *exposed) *portResult {
	f := e.fwd
	return &portResult{e.instanceID, f.GuestPort, f.HostPort, "127.0.0.1", "http://" + f.Addr(), "exposed",
		iso(e.created), f.Connections.Load(), f.Failures.Load(), f.BytesIn.Load(), f.BytesOut.Load()}
}

func (s *Server) unexposePort(ctx context.Context, a unexposeArgs) (*portResult, error) {
	key := portKey(a.InstanceID, a.Port)
	s.ports.mu.Lock()
	e, ok := s.ports.byKey[key]
	s.ports.mu.Unlock()
	if !ok || s.allowed(ctx, e.root) != nil { // another workspace's forward: not this client's to see
		return nil, newToolError(CodePortNotExposed, fmt.Sprintf("port %d of %s is not exposed", a.Port,
			clip(a.InstanceID)), map[string]any{"instance_id": clip(a.InstanceID), "port": a.Port})
	}
	e.fwd.Close()
	s.ports.mu.Lock()
	delete(s.ports.byKey, key)
	s.ports.mu.Unlock()
	out := exposedJSON(e)
	out.Status = "unexposed"
	return out, nil
}

func (s *Server) listExposedPorts(ctx context.Context, a listPortsArgs) (*portListResult, error) {
	s.ports.mu.Lock()
	all := slices.Sorted(maps.Keys(s.ports.byKey))
	entries := make([]*exposed, 0, len(all))
	for _, k := range all {
		entries = append(entries, s.ports.byKey[k])
	}
	s.ports.mu.Unlock()
	out := []*portResult{}
	for _, e := range entries {
		if closed(e.fwd) || (a.InstanceID != "" && e.instanceID != a.InstanceID) || s.allowed(ctx, e.root) != nil {
			continue
		}
		out = append(out, exposedJSON(e))
	}
	return &portListResult{out, len(out)}, nil
}

// startSweep starts the goroutine that closes forwards whose sandbox
// ended, once; the caller holds s.ports.mu.
func (s *Server) startSweep() {
	if s.ports.sweeping {
		return
	}
	s.ports.sweeping, s.ports.stop = true, make(chan struct{})
	go s.sweepPorts(s.ports.stop)
}

func (s *Server) sweepPorts(stop <-chan struct{}) {
	tick := s.cfg.Engine.Clock.NewTicker(portSweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C():
			s.prunePorts()
		}
	}
}

// prunePorts closes and forgets the forwards whose sandbox no longer
// holds a lease (or that stopped on their own).
func (s *Server) prunePorts() {
	s.ports.mu.Lock()
	defer s.ports.mu.Unlock()
	for key, e := range s.ports.byKey {
		if closed(e.fwd) {
			delete(s.ports.byKey, key)
			continue
		}
		ws, err := s.options(e.root, nil)
		if err == nil {
			_, err = s.cfg.Engine.Target(ws, e.fwd.Sandbox)
		}
		if err != nil {
			e.fwd.Close()
			delete(s.ports.byKey, key)
		}
	}
}

// Close ends everything the server holds open beyond a call: the exec
// sessions' commands and the ports it exposed.
func (s *Server) Close() {
	s.execSessions.EndAll("the server stopped")
	s.ports.mu.Lock()
	defer s.ports.mu.Unlock()
	for key, e := range s.ports.byKey {
		e.fwd.Close()
		delete(s.ports.byKey, key)
	}
	if s.ports.sweeping {
		close(s.ports.stop)
		s.ports.sweeping = false
	}
}
