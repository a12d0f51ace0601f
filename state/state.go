// Package state keeps what sbf has done to the world: one file per
// workspace (.sandboxforge/state.json), in the format of package
// statefile, written atomically under a file lock, with a backup of the
// version each run started from.
package state

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/sandboxforge/sbf/state/statefile"
)

// Version is the state file format this build writes.
const Version = statefile.Version

// MaxSavedOutput bounds the output kept of a task whose sandbox ended.
const MaxSavedOutput = statefile.MaxSavedOutput

// The format's types, under the names sbf has always used for them.
type (
	File          = statefile.File
	Sandbox       = statefile.Sandbox
	Task          = statefile.Task
	SavedOutput   = statefile.SavedOutput
	GuestRecord   = statefile.GuestRecord
	ServiceRecord = statefile.ServiceRecord
	Phase         = statefile.Phase
	Snapshot      = statefile.Snapshot
)

const (
	Pending   = statefile.Pending
	Creating  = statefile.Creating
	Running   = statefile.Running
	Stopped   = statefile.Stopped
	Expired   = statefile.Expired
	Destroyed = statefile.Destroyed
	Failed    = statefile.Failed
	// Forgotten asks for a record to be dropped: it is never stored, the
	// write that sees it removes the record.
	Forgotten = statefile.Forgotten
)

// SbfVersion is recorded as written_by in every state file this process
// writes; sbf's main sets it to its own version.
var SbfVersion = "devel"

// New is the state of a workspace sbf has never written. Its lineage is
// given on the first write, so every plan made before then agrees on it.
func New(root, workspaceID string) *File {
	return &File{
		Version:       Version,
		WorkspaceRoot: root,
		WorkspaceID:   workspaceID,
		Sandboxes:     map[string]*Sandbox{},
	}
}

// dropForgotten removes the records asked to be forgotten; lineage and
// serial are the file's, not the records', so they carry on.
func dropForgotten(f *File) {
	for name, sb := range f.Sandboxes {
		if sb.Phase == Forgotten {
			delete(f.Sandboxes, name)
		}
	}
}

func newLineage() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
