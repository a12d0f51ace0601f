// Package external runs a backend as a separate program that sbf starts and talks to over
// a small JSON-RPC on the program's stdin and stdout, as Lima 2's external drivers do. A
// backend whose libraries are heavy (the kubevirt driver links client-go and
// controller-runtime: ~2.8 MB and ~55 ms of package init) stays out of sbf's own binary, so
// every `sbf exec` keeps its cheap start. The plugin owns the backend's API; sbf keeps what
// every backend shares: commands, copies and terminals go over drivers/sshexec to the SSH
// endpoint the plugin reports.
//
// The wire: one JSON object per line each way. sbf sends Requests with increasing ids; the
// plugin answers each with any number of progress lines and then one line carrying its
// result or error, in any order across ids (calls run concurrently). A "cancel" request
// cancels the call it names. The plugin ends when its stdin closes.
package external

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
)

// ProtocolVersion is what Hello exchanges; a plugin speaking another refuses.
const ProtocolVersion = 1

// Methods of the protocol.
const (
	MethodHello       = "hello"
	MethodList        = "list"
	MethodCreate      = "create"
	MethodStart       = "start"
	MethodStop        = "stop"
	MethodDelete      = "delete"
	MethodReconfigure = "reconfigure"
	MethodValidate    = "validate"
	MethodMarkSpare   = "mark_spare"
	MethodClaim       = "claim"
	MethodRecordLease = "record_lease"
	MethodSSH         = "ssh"
	MethodDiagnose    = "diagnose"
	MethodCancel      = "cancel"
	// MethodEnforceEgress asks whether the plugin enforces a spec's [network] policy
	// (drivers.EgressEnforcer). A plugin older than the method answers "unknown method",
	// which refuses the policy: it is never run open.
	MethodEnforceEgress = "enforce_egress"
	// MethodDepartures asks why named instances went without sbf (drivers.DepartureReporter).
	// A plugin older than the method answers "unknown method": nothing is known of them.
	MethodDepartures = "departures"
)

// Request is one call, a line on the plugin's stdin.
type Request struct {
	ID     uint64          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Response is a line on the plugin's stdout: progress of call ID, or its end (Done) with
// Result or Error.
type Response struct {
	ID       uint64          `json:"id"`
	Progress string          `json:"progress,omitempty"`
	Done     bool            `json:"done,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *Error          `json:"error,omitempty"`
}

// Hello opens a session: who sbf is acting for, and the key guests must accept.
type Hello struct {
	ProtocolVersion int    `json:"protocol_version"`
	WorkspaceID     string `json:"workspace_id,omitempty"`
	WorkspaceRoot   string `json:"workspace_root,omitempty"`
	SSHPublicKey    string `json:"ssh_public_key"` // authorized_keys form
	SSHUser         string `json:"ssh_user"`
}

// HelloResult is what the plugin says about itself.
type HelloResult struct {
	ProtocolVersion int    `json:"protocol_version"`
	Driver          string `json:"driver"`
	// Where describes the world the plugin acts on (a cluster and namespace), for messages.
	Where string `json:"where,omitempty"`
}

// Name is the parameter of calls about one instance.
type Name struct {
	Name string `json:"name"`
}

// Spare is mark_spare's parameter.
type Spare struct {
	Name  string             `json:"name"`
	Label drivers.SpareLabel `json:"label"`
}

// Claim is claim's parameter.
type Claim struct {
	Name  string        `json:"name"`
	Owner drivers.Owner `json:"owner"`
}

// Lease is record_lease's parameter: when the sandbox's lease ends, recorded on the
// instance for people and tools that look at the backend directly.
type Lease struct {
	Name      string    `json:"name"`
	ExpiresAt time.Time `json:"expires_at"`
}

// SSHEndpoint is how sbf reaches a running instance's sshd: an address on this host (the
// plugin forwards it) and the guest user.
type SSHEndpoint struct {
	Host string `json:"host"`
	Port string `json:"port"`
	User string `json:"user"`
}

// Diagnose is diagnose's parameter.
type Diagnose struct {
	Specs []drivers.Spec `json:"specs"`
}

// Names is departures' parameter.
type Names struct {
	Names []string `json:"names"`
}

// Cancel is cancel's parameter.
type Cancel struct {
	ID uint64 `json:"id"`
}

// Error is a failed call, keeping the kinds of error the engine tells apart.
type Error struct {
	Message     string                    `json:"message"`
	NotFound    bool                      `json:"not_found,omitempty"`
	Owned       *drivers.Owner            `json:"owned_by,omitempty"`
	Unavailable *drivers.UnavailableError `json:"unavailable,omitempty"`
	Spec        *drivers.SpecError        `json:"spec,omitempty"`
	Policy      *drivers.PolicyError      `json:"policy,omitempty"`
	// Coded is a refusal the plugin coded itself (a cluster's per-owner ceiling:
	// INSTANCE_LIMIT_EXCEEDED), its code and details kept as the plugin gave them.
	Coded *coded.Error `json:"coded,omitempty"`
}

// EncodeError is err as it crosses the wire.
func EncodeError(err error) *Error {
	e := &Error{Message: err.Error(), NotFound: errors.Is(err, drivers.ErrNotFound)}
	var owned *drivers.OwnedError
	if errors.As(err, &owned) {
		e.Owned = &owned.Owner
	}
	var u *drivers.UnavailableError
	if errors.As(err, &u) {
		e.Unavailable = u
	}
	var s *drivers.SpecError
	if errors.As(err, &s) {
		e.Spec = s
	}
	var p *drivers.PolicyError
	if errors.As(err, &p) {
		e.Policy = p
	}
	var c *coded.Error
	if errors.As(err, &c) {
		e.Coded = c
	}
	return e
}

// remoteError is an error from the plugin: its message as the plugin wrote it, and the
// typed errors it carried, so errors.Is and errors.As work on this side too.
type remoteError struct {
	msg   string
	kinds []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.kinds }

// Decode is the error e describes; instance names the instance of the call, for an
// OwnedError.
func (e *Error) Decode(instance string) error {
	r := &remoteError{msg: e.Message}
	if e.NotFound {
		r.kinds = append(r.kinds, drivers.ErrNotFound)
	}
	if e.Owned != nil {
		r.kinds = append(r.kinds, &drivers.OwnedError{Instance: instance, Owner: *e.Owned})
	}
	if e.Unavailable != nil {
		r.kinds = append(r.kinds, e.Unavailable)
	}
	if e.Spec != nil {
		r.kinds = append(r.kinds, e.Spec)
	}
	if e.Policy != nil {
		r.kinds = append(r.kinds, e.Policy)
	}
	if e.Coded != nil {
		r.kinds = append(r.kinds, e.Coded)
	}
	return r
}

// call is a request's parameters encoded, or an error naming the method.
func encodeParams(method string, params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	data, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encoding %s's parameters: %w", method, err)
	}
	return data, nil
}
