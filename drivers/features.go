package drivers

import (
	"context"
	"reflect"
	"sync"
)

// AllLister lists a backend's instances under any name, beyond the ones
// sbf named or labelled that List reports: SandboxForge v1's agent-…
// VMs, which sbf import-v1 takes over.
type AllLister interface {
	ListAll(ctx context.Context) ([]Instance, error)
}

// Inspector looks up named instances without listing the rest: what a
// run touched, after it, whatever the number of instances the backend
// holds. Names it does not find are left out (not an error); what it
// reports of the others is what List would.
type Inspector interface {
	Inspect(ctx context.Context, names []string) ([]Instance, error)
}

// Capabilities are what a backend can do beyond the lifecycle every Driver
// has, as Lima's driver Info says: each field one optional interface, nil
// when the backend lacks it. This struct is their one list: CapabilitiesOf
// fills every field from the backend's type, so the engine and the data
// plane ask a field here rather than asserting types all over, and a
// registration declares nothing (its Zero's type says it).
type Capabilities struct {
	Exec            Execer         // commands in a running instance
	Terminal        Terminal       // interactive commands (sbf exec -t)
	CopyIn          Copier         // host files into the guest (the guest layers)
	Archive         ArchiveCopier  // tar streams in and out (cp, sync)
	Remove          Remover        // deletes guest paths itself (sync --delete)
	Connections     Connector      // keeps connections open (the exec broker)
	Validate        Validator      // refuses specs it cannot honour at plan time
	Labels          Labeler        // ownership labels (pools, adoption, import)
	Warm            Warmer         // opens an adopted spare's connection early
	ForceStop       ForceStopper   // halts an expiring VM at once
	HostShell       bool           // its commands run on this host, not in a VM (HostShell.RunsOnHost): the sim
	RecordLease     LeaseRecorder  // the lease end on the instance
	EnforceEgress   EgressEnforcer // [network] policies outside the guest
	EgressLog       EgressLogger   // the policy's decision log
	GuardLog        GuardLogger    // refused reaches for the host's services
	DialGuest       PortDialer     // port forwards
	DialSocket      SocketDialer   // unix sockets in the guest (the cheap look asks dockerd)
	Snapshots       Snapshotter
	ExportSnapshots SnapshotPorter    // snapshots outlive their instance
	Clone           Cloner            // clone_of, from_snapshot
	Fork            Forker            // running copies from saved memory (sbf fork)
	Templates       Templater         // saved memory kept for creates (a pool's memory templates)
	ListAll         AllLister         // instances under any name (import-v1)
	Inspect         Inspector         // named instances alone (what a run touched)
	Departures      DepartureReporter // why instances sbf made went without it (a cluster's expiry)
}

// implemented holds, by driver type, the indices of the Capabilities
// fields the type implements: Implements compares method sets, about 40 µs
// for all the fields, and every command asks. Its keys are the program's
// driver types, so it stays as small as they are few.
var implemented sync.Map // reflect.Type → []int

func implementedBy(t reflect.Type) []int {
	if fields, ok := implemented.Load(t); ok {
		return fields.([]int)
	}
	var fields []int
	ct := reflect.TypeFor[Capabilities]()
	for i := range ct.NumField() {
		if f := ct.Field(i).Type; f.Kind() == reflect.Interface && t.Implements(f) {
			fields = append(fields, i)
		}
	}
	implemented.Store(t, fields)
	return fields
}

// CapabilitiesOf finds what d can do: each interface field of Capabilities
// that d's type implements holds d. d may be a nil pointer of a backend's
// type (Registration.Zero): only HostShell's RunsOnHost is called, and it
// answers from the type alone.
func CapabilitiesOf(d Driver) Capabilities {
	var c Capabilities
	if d == nil {
		return c
	}
	cv, dv := reflect.ValueOf(&c).Elem(), reflect.ValueOf(d)
	for _, i := range implementedBy(dv.Type()) {
		cv.Field(i).Set(dv)
	}
	if hs, ok := d.(HostShell); ok {
		c.HostShell = hs.RunsOnHost()
	}
	return c
}
