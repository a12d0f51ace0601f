package drivers

import (
	"context"
	"fmt"
	"reflect"
	"strings"
)

// Features say what a backend can do beyond the lifecycle every Driver
// has, as Lima's driver Info does: its registration declares them, so
// what a backend offers is read in one place rather than inferred from
// its methods, and CheckFeatures holds the declaration to the code. Each
// is one optional interface; a field's name is its Capabilities field's.
type Features struct {
	Exec            bool `feature:"exec"`             // Execer: commands in a running instance
	Terminal        bool `feature:"terminal"`         // Terminal: interactive commands (sbf exec -t)
	CopyIn          bool `feature:"copy-in"`          // Copier: host files into the guest (the guest layers)
	Archive         bool `feature:"archive"`          // ArchiveCopier: tar streams in and out (cp, sync)
	Remove          bool `feature:"remove"`           // Remover: deletes guest paths itself (sync --delete)
	Connections     bool `feature:"connections"`      // Connector: keeps connections open (the exec broker)
	Validate        bool `feature:"validate"`         // Validator: refuses specs it cannot honour at plan time
	Labels          bool `feature:"labels"`           // Labeler: ownership labels (pools, adoption, import)
	Warm            bool `feature:"warm"`             // Warmer: opens an adopted spare's connection early
	ForceStop       bool `feature:"force-stop"`       // ForceStopper: halts an expiring VM at once
	HostShell       bool `feature:"host-shell"`       // HostShell answering true: commands run on this host
	RecordLease     bool `feature:"record-lease"`     // LeaseRecorder: the lease end on the instance
	EnforceEgress   bool `feature:"enforce-egress"`   // EgressEnforcer: [network] policies outside the guest
	EgressLog       bool `feature:"egress-log"`       // EgressLogger: the policy's decision log
	GuardLog        bool `feature:"guard-log"`        // GuardLogger: refused reaches for the host's services
	DialGuest       bool `feature:"dial-guest"`       // PortDialer: port forwards
	Snapshots       bool `feature:"snapshots"`        // Snapshotter
	ExportSnapshots bool `feature:"export-snapshots"` // SnapshotPorter: snapshots outlive their instance
	Clone           bool `feature:"clone"`            // Cloner: clone_of, from_snapshot
	ListAll         bool `feature:"list-all"`         // AllLister: instances under any name (import-v1)
}

// List names the features that are set, in the struct's order: what sbf
// doctor and a mismatch report show.
func (f Features) List() []string {
	var out []string
	v := reflect.ValueOf(f)
	for i := range v.NumField() {
		if v.Field(i).Bool() {
			out = append(out, v.Type().Field(i).Tag.Get("feature"))
		}
	}
	return out
}

// AllLister lists a backend's instances under any name, beyond the ones
// sbf named or labelled that List reports: SandboxForge v1's agent-…
// VMs, which sbf import-v1 takes over.
type AllLister interface {
	ListAll(ctx context.Context) ([]Instance, error)
}

// Capabilities are a built backend's optional interfaces, each nil when
// it lacks it. CapabilitiesOf does the type assertions once, so the engine
// and the data plane ask a field here rather than asserting types all
// over, and what a backend can do is decided in one place that
// CheckFeatures holds to its registration.
type Capabilities struct {
	Exec            Execer
	Terminal        Terminal
	CopyIn          Copier
	Archive         ArchiveCopier
	Remove          Remover
	Connections     Connector
	Validate        Validator
	Labels          Labeler
	Warm            Warmer
	ForceStop       ForceStopper
	HostShell       bool // its commands run on this host, not in a VM (HostShell.RunsOnHost): the sim
	RecordLease     LeaseRecorder
	EnforceEgress   EgressEnforcer
	EgressLog       EgressLogger
	GuardLog        GuardLogger
	DialGuest       PortDialer
	Snapshots       Snapshotter
	ExportSnapshots SnapshotPorter
	Clone           Cloner
	ListAll         AllLister
}

// CapabilitiesOf finds what d can do. d may be a nil pointer of a
// backend's type (Registration.Zero): only HostShell's RunsOnHost is
// called, and it answers from the type alone.
func CapabilitiesOf(d Driver) Capabilities {
	var c Capabilities
	c.Exec, _ = d.(Execer)
	c.Terminal, _ = d.(Terminal)
	c.CopyIn, _ = d.(Copier)
	c.Archive, _ = d.(ArchiveCopier)
	c.Remove, _ = d.(Remover)
	c.Connections, _ = d.(Connector)
	c.Validate, _ = d.(Validator)
	c.Labels, _ = d.(Labeler)
	c.Warm, _ = d.(Warmer)
	c.ForceStop, _ = d.(ForceStopper)
	if hs, ok := d.(HostShell); ok {
		c.HostShell = hs.RunsOnHost()
	}
	c.RecordLease, _ = d.(LeaseRecorder)
	c.EnforceEgress, _ = d.(EgressEnforcer)
	c.EgressLog, _ = d.(EgressLogger)
	c.GuardLog, _ = d.(GuardLogger)
	c.DialGuest, _ = d.(PortDialer)
	c.Snapshots, _ = d.(Snapshotter)
	c.ExportSnapshots, _ = d.(SnapshotPorter)
	c.Clone, _ = d.(Cloner)
	c.ListAll, _ = d.(AllLister)
	return c
}

// Features says which capabilities are there: a field of Features is set
// when the Capabilities field of the same name is.
func (c Capabilities) Features() Features {
	var f Features
	cv, fv := reflect.ValueOf(c), reflect.ValueOf(&f).Elem()
	for i := range cv.NumField() {
		x := cv.Field(i)
		fv.FieldByName(cv.Type().Field(i).Name).SetBool(x.Kind() == reflect.Bool && x.Bool() ||
			x.Kind() == reflect.Interface && !x.IsNil())
	}
	return f
}

// CheckFeatures compares what a registration declares with what d, a
// backend its New built or its Zero, implements: nil when they agree,
// else an error naming each feature declared without the code or the
// other way round.
func CheckFeatures(r Registration, d Driver) error {
	got := CapabilitiesOf(d).Features()
	if got == r.Features {
		return nil
	}
	var missing, undeclared []string
	dv, gv := reflect.ValueOf(r.Features), reflect.ValueOf(got)
	for i := range dv.NumField() {
		name := dv.Type().Field(i).Tag.Get("feature")
		switch declared, has := dv.Field(i).Bool(), gv.Field(i).Bool(); {
		case declared && !has:
			missing = append(missing, name)
		case has && !declared:
			undeclared = append(undeclared, name)
		}
	}
	var why []string
	if len(missing) > 0 {
		why = append(why, fmt.Sprintf("declares %s, which %T does not implement", strings.Join(missing, ", "), d))
	}
	if len(undeclared) > 0 {
		why = append(why, fmt.Sprintf("%T implements %s, which it does not declare", d, strings.Join(undeclared, ", ")))
	}
	return fmt.Errorf("the %s backend's Features disagree with its code: %s", r.Name, strings.Join(why, "; "))
}
