// Package state keeps what sbf has done to the world: one JSON file per
// workspace (.sandboxforge/state.json), written atomically with a backup
// of the previous version, serialised between processes by a file lock.
package state

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// Version is the state file format this build writes.
const Version = 1

// Phase is where a sandbox is in its life.
type Phase string

const (
	Pending   Phase = "pending"
	Creating  Phase = "creating"
	Running   Phase = "running"
	Stopped   Phase = "stopped"
	Expired   Phase = "expired"
	Destroyed Phase = "destroyed"
	Failed    Phase = "failed"
	// Forgotten asks for a record to be dropped: it is never stored, the
	// write that sees it removes the record. The planner asks once a
	// terminal record outlived [lease] keep_records.
	Forgotten Phase = "forgotten"
)

// Terminal phases have no VM behind them.
func (p Phase) Terminal() bool { return p == Expired || p == Destroyed || p == Forgotten }

// dropForgotten removes the records asked to be forgotten; lineage and
// serial are the file's, not the records', so they carry on.
func (f *File) dropForgotten() {
	for name, sb := range f.Sandboxes {
		if sb.Phase == Forgotten {
			delete(f.Sandboxes, name)
		}
	}
}

// File is the whole state of one workspace.
type File struct {
	Version       int                 `json:"version"`
	Lineage       string              `json:"lineage"` // fixed for the life of this state history
	Serial        int64               `json:"serial"`  // +1 on every write
	WorkspaceRoot string              `json:"workspace_root"`
	WorkspaceID   string              `json:"workspace_id"`
	Sandboxes     map[string]*Sandbox `json:"sandboxes"`
	// Tasks are background commands started in sandboxes, by id.
	Tasks map[string]*Task `json:"tasks,omitempty"`
}

// Task is a background command running detached in a sandbox's guest: its
// own process group, its output and exit code in files there. The record
// lets status, logs and stop work after sbf or the MCP server restarts.
type Task struct {
	ID           string     `json:"task_id"`
	Sandbox      string     `json:"sandbox"`
	Instance     string     `json:"instance"`
	Command      string     `json:"command"`
	Cwd          string     `json:"cwd,omitempty"`
	Status       string     `json:"status"` // running, succeeded, failed, stopped
	PID          int        `json:"pid"`
	CreatedAt    time.Time  `json:"created_at"`
	StartedAt    *time.Time `json:"started_at,omitempty"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	ExitCode     *int       `json:"exit_code,omitempty"`
	ErrorMessage string     `json:"error_message,omitempty"`
	LogPath      string     `json:"log_path"`  // in the guest
	ExitPath     string     `json:"exit_path"` // in the guest
}

// Finished reports whether the task has ended one way or another.
func (t *Task) Finished() bool { return t.Status != "running" }

// Sandbox records one sandbox's instance as sbf last left it.
type Sandbox struct {
	Driver   string `json:"driver"`
	Instance string `json:"instance"`
	Phase    Phase  `json:"phase"`
	// VM is the spec last applied successfully; the planner diffs against it.
	VM *drivers.Spec `json:"vm,omitempty"`
	// Applied holds a hash per layer converged inside the VM (runtime,
	// services, compose), so unchanged layers are skipped.
	Applied   map[string]string `json:"applied,omitempty"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty"` // the lease when last applied
	CreatedAt *time.Time        `json:"created_at,omitempty"`
	UpdatedAt time.Time         `json:"updated_at"`
	LastError string            `json:"last_error,omitempty"`
	SSH       string            `json:"ssh,omitempty"`
	// Guest is what the in-guest layers were last converged to: what
	// prepare_workspace reports. It never holds a secret.
	Guest *GuestRecord `json:"guest,omitempty"`
}

// GuestRecord is what converging a sandbox's in-guest layers did.
type GuestRecord struct {
	DockerCommand string                   `json:"docker_command,omitempty"`
	Network       string                   `json:"network,omitempty"`
	Services      map[string]ServiceRecord `json:"services,omitempty"`
	// EnvFiles are the host files that received connection variables,
	// with the names (never the values) written.
	EnvFiles map[string][]string `json:"env_files,omitempty"`
}

// ServiceRecord is one service container as it was started.
type ServiceRecord struct {
	Container string `json:"container"`
	Image     string `json:"image"`
	Port      int    `json:"port"`
	Ready     bool   `json:"ready"`
	Attempts  int    `json:"attempts"`
}

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

func newLineage() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
