// Package readcount counts what a request reads of the world it works on:
// the workspace path resolved, the spec loaded and merged, the overrides
// document, the state file, the host index, a driver's listing (and its look
// at the instances a run touched) and the served-folder policy. A request should build its workspace once and hand
// it on, so each count is a cost a test can hold (mcpserver/loads_test.go,
// cli/loads_test.go) and the server exports (sbf_reads_total).
//
// The counts are the process's: a test takes the difference around one
// call, with nothing else running.
package readcount

import (
	"strconv"
	"sync/atomic"
)

// Kind is one kind of read.
type Kind int

const (
	Resolve   Kind = iota // a workspace path resolved (spec.WorkspaceIdentity, the served-folder rule)
	SpecLoad              // a spec loaded from its files (spec.Load)
	SpecMerge             // the layers merged into a desired state (spec.Load, Resolved.WithManaged)
	Overrides             // the managed overrides document read from disk
	State                 // a workspace's state file read (state.Read, state.Open)
	Index                 // the host index read, whole or its new lines (finding it unchanged is no read)
	List                  // a driver asked for its instances (observing a workspace)
	ListCap               // a driver asked for its instances to count the host's cap
	Inspect               // a driver asked for the instances a run touched, after it (drivers.Inspector)
	Policy                // a folder checked against the served roots (policy.WorkspaceAs)
	Archive               // a workspace's archive of ended records read (its head's first bytes are no read)
	kinds
)

var names = [kinds]string{"resolve", "spec_load", "spec_merge", "overrides", "state", "index", "list", "list_cap",
	"inspect", "policy",
	"archive"}

func (k Kind) String() string { return names[k] }

var counts [kinds]atomic.Int64

// Add counts one read of kind k.
func Add(k Kind) { counts[k].Add(1) }

// Counts are the reads of each kind.
type Counts [kinds]int64

// Now are the reads counted so far.
func Now() Counts {
	var c Counts
	for k := range c {
		c[k] = counts[k].Load()
	}
	return c
}

// Since are the reads counted after before.
func (c Counts) Since(before Counts) Counts {
	for k := range c {
		c[k] -= before[k]
	}
	return c
}

// Of is the count of kind k.
func (c Counts) Of(k Kind) int64 { return c[k] }

// Kinds are every kind, in order.
func Kinds() []Kind {
	out := make([]Kind, kinds)
	for k := range out {
		out[k] = Kind(k)
	}
	return out
}

// String shows the counts that are not zero, in order ("resolve=1 state=2").
func (c Counts) String() string {
	var s string
	for k, n := range c {
		if n != 0 {
			if s != "" {
				s += " "
			}
			s += names[k] + "=" + strconv.FormatInt(n, 10)
		}
	}
	return s
}

// syncs counts the durable writes (an fsync of a file or a folder) the
// process made: what a step costs the disk beyond its reads. A test holds
// it per create and per destroy (state.TestACreateSyncsTwice).
var syncs atomic.Int64

// Synced counts one fsync.
func Synced() { syncs.Add(1) }

// Syncs are the fsyncs counted so far.
func Syncs() int64 { return syncs.Load() }
