// Package statefile is the format of sbf's state file
// (.sandboxforge/state.json), apart from where and how it is stored: the
// types of the current version, Read (which upgrades an older version
// step by step) and Write. It touches no file and takes no lock; package
// state does both.
//
// Every version sbf ever wrote stays readable. A field added so that an
// older sbf may ignore it keeps the version (its readers skip unknown
// fields), so it must be optional; a change an older sbf would misread
// raises Version and adds an upgrade step (upgrade.go) from the previous
// version's own types, kept frozen beside it, with a fixture in
// testdata/upgrade.
package statefile

import (
	"encoding/json"
	"time"
)

// Version is the format this build writes. Every file so far is version
// 1; its fields grew without changing meaning (testdata/upgrade holds the
// shapes earlier builds wrote).
const Version = 1

// File is the whole state of one workspace.
type File struct {
	Version int `json:"version"`
	// WrittenBy is the sbf version that last wrote the file; empty when
	// that sbf predates the field (and dropped it on rewriting).
	WrittenBy     string              `json:"written_by,omitempty"`
	Lineage       string              `json:"lineage"` // fixed for the life of this state history
	Serial        int64               `json:"serial"`  // +1 on every write
	WorkspaceRoot string              `json:"workspace_root"`
	WorkspaceID   string              `json:"workspace_id"`
	Sandboxes     map[string]*Sandbox `json:"sandboxes"`
	// Tasks are background commands started in sandboxes, by id.
	Tasks map[string]*Task `json:"tasks,omitempty"`
	// Snapshots are the snapshots sbf took of its sandboxes' instances,
	// sorted by sandbox and name. They go with their sandbox's VM.
	Snapshots []*Snapshot `json:"snapshots,omitempty"`
}

// Snapshot records one snapshot of a sandbox's instance.
type Snapshot struct {
	Sandbox   string    `json:"sandbox"`
	Instance  string    `json:"instance"`
	Name      string    `json:"name"`
	Driver    string    `json:"driver"`
	CreatedAt time.Time `json:"created_at"`
	// SizeBytes is what the backend said the snapshot takes; zero when
	// it did not say.
	SizeBytes int64 `json:"size_bytes,omitempty"`
}

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

// Sandbox records one sandbox's instance as sbf last left it.
type Sandbox struct {
	Driver   string `json:"driver"`
	Instance string `json:"instance"`
	Phase    Phase  `json:"phase"`
	// VM is the spec last applied successfully; the planner diffs against it.
	VM *VM `json:"vm,omitempty"`
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

// VM is the spec a sandbox's instance was last made or changed to, as the
// state file keeps it: the format's own type, so a change to the driver
// layer's types never changes the file.
type VM struct {
	Name      string            `json:"name"`
	CPUs      int               `json:"cpus"`
	MemoryGiB float64           `json:"memory_gib"`
	DiskGiB   float64           `json:"disk_gib"`
	Arch      string            `json:"arch,omitempty"`
	VMType    string            `json:"vm_type,omitempty"`
	Template  string            `json:"template,omitempty"`
	Image     VMImage           `json:"image,omitzero"`
	Mounts    []string          `json:"mounts,omitempty"`
	Ports     []string          `json:"ports,omitempty"`
	Emulation string            `json:"emulation,omitempty"`
	Backend   map[string]string `json:"backend,omitempty"`
	Egress    *VMEgress         `json:"egress,omitempty"`
}

// VMImage is the image a VM was made from.
type VMImage struct {
	Location      string `json:"location,omitempty"`
	Digest        string `json:"digest,omitempty"`
	Kernel        string `json:"kernel,omitempty"`
	KernelCmdline string `json:"kernel_cmdline,omitempty"`
	Initrd        string `json:"initrd,omitempty"`
}

// VMEgress is a VM's network policy.
type VMEgress struct {
	Mode  string   `json:"mode"`
	Allow []string `json:"allow,omitempty"`
}

// GuestRecord is what converging a sandbox's in-guest layers did.
type GuestRecord struct {
	DockerCommand string                   `json:"docker_command,omitempty"`
	Network       string                   `json:"network,omitempty"`
	Services      map[string]ServiceRecord `json:"services,omitempty"`
	// EnvFiles are the host files that received connection variables,
	// with the names (never the values) written.
	EnvFiles map[string][]string `json:"env_files,omitempty"`
	// Containers holds, per compose project, the config hash of each
	// service's container as sbf's last `up` of it left them: a pass that
	// finds exactly these running asks compose nothing (guest.ObserveRecorded).
	Containers map[string]map[string]string `json:"containers,omitempty"`
}

// ServiceRecord is one service container as it was started.
type ServiceRecord struct {
	Container string `json:"container"`
	Image     string `json:"image"`
	Port      int    `json:"port"`
	Ready     bool   `json:"ready"`
	Attempts  int    `json:"attempts"`
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
	// SavedOutput is the end of the task's output, read when its sandbox
	// ended (destroyed or expired): the log in the guest went with the VM.
	SavedOutput *SavedOutput `json:"saved_output,omitempty"`
}

// SavedOutput is the tail of a task's output kept after its sandbox ended.
type SavedOutput struct {
	Text string `json:"text"`
	// Truncated says earlier output was dropped: only the last
	// MaxSavedOutput bytes are kept.
	Truncated bool      `json:"truncated"`
	SavedAt   time.Time `json:"saved_at"`
	// Why names the end of the sandbox: "the sandbox was destroyed".
	Why string `json:"why"`
}

// MaxSavedOutput bounds the output a task record keeps of an ended
// sandbox, so a chatty task cannot grow the state file without end.
const MaxSavedOutput = 16 << 10

// Finished reports whether the task has ended one way or another.
func (t *Task) Finished() bool { return t.Status != "running" }

// Clone deep-copies the state.
func (f *File) Clone() *File {
	data, err := json.Marshal(f)
	if err != nil {
		panic("state: cannot encode itself: " + err.Error())
	}
	var out File
	if err := json.Unmarshal(data, &out); err != nil {
		panic("state: cannot decode itself: " + err.Error())
	}
	if out.Sandboxes == nil {
		out.Sandboxes = map[string]*Sandbox{}
	}
	return &out
}

// CloneSandbox deep-copies one record.
func CloneSandbox(sb *Sandbox) *Sandbox {
	data, err := json.Marshal(sb)
	if err != nil {
		panic("state: cannot encode a record: " + err.Error())
	}
	var out Sandbox
	if err := json.Unmarshal(data, &out); err != nil {
		panic("state: cannot decode a record: " + err.Error())
	}
	return &out
}
