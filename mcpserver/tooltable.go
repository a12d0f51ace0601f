package mcpserver

import (
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/sandbox"
)

// registerTools registers every tool the server serves, from this one
// table: each tool's name, the title a client shows, its toolset (and
// whether it is one of SandboxForge v1's), its hints, whether it may run
// as an MCP task and whether the history leaves it out, what it does and
// returns (said once, for an LLM that reads it before its first call),
// and its handler, whose argument type is its input schema and whose
// result type its output schema (tool.go). tools/list, the toolsets,
// enable_toolset's answer and the tests all read what this registers.
func (s *Server) registerTools() {
	addTool(s, toolDef{name: "create_instance", title: "Create a sandbox", set: setCore, v1: true,
		hints: makesVM, task: true, unrecorded: true, // a new VM each call; downloads its image, installs Docker
		args: map[string]argRule{"ttl_minutes": atLeast(1), "cpus": atLeast(1), "memory_gib": positive(),
			"disk_gib": positive()},
		about: "Lease a new sandbox VM for a workspace and converge it (VM, then runtime, services and compose " +
			"when auto_bootstrap). Returns its instance_id, which the other tools take, its expires_at and, " +
			"when bootstrapped, what preparing it did."}, s.createInstance)
	addTool(s, toolDef{name: "list_instances", title: "List sandboxes", set: setCore, v1: true,
		hints: readOnly, // observes; an expired lease is left for the loop
		about: "List sbf instances on this host. Returns instances, one row each with its instance_id, status, " +
			"phase, lease end and drift, and whether the backend is available."}, s.listInstances)
	addTool(s, toolDef{name: "destroy_instance", title: "Destroy a sandbox", set: setCore, v1: true,
		hints: replaces, task: true, unrecorded: true, // deletes the VM; destroying it again is a no-op
		about: "Release an instance's lease; its VM is stopped and deleted (force: at once, without a clean " +
			"stop). Works on expired instances too. Returns the instance_id and its status."}, s.destroyInstance)
	addTool(s, toolDef{name: "extend_instance_ttl", title: "Extend a sandbox's lease", set: setCore, v1: true,
		hints: adds, unrecorded: true, // moves the lease end later, by more on every call
		args:  map[string]argRule{"ttl_minutes": atLeast(1)},
		about: "Move an instance's lease end later by ttl_minutes. Returns the new expires_at."}, s.extendInstance)
	addTool(s, toolDef{name: "run_ephemeral", title: "Run a command in a throwaway sandbox", set: setCore,
		hints: runsCode, task: true, // arbitrary code in a VM it makes and deletes
		args: map[string]argRule{"timeout_seconds": atLeast(1), "cpus": atLeast(1), "memory_gib": positive()},
		about: "Make a sandbox (a pool's warm spare when there is one), run one command in it and destroy it, " +
			"in one call. Returns run_command's result plus warm_spare, sandbox_ready_ms and destroyed."},
		s.runEphemeral)
	addTool(s, toolDef{name: "run_command", title: "Run a command", set: setCore, v1: true, hints: runsCode, task: true,
		args: map[string]argRule{"timeout_seconds": atLeast(1)},
		about: "Run a shell command in an instance; a non-zero exit code is a result, not an error. Returns " +
			"exit_code, stdout and stderr (cut at max_output_bytes: *_truncated, *_bytes), duration_ms and " +
			"timed_out."}, s.runCommand)
	addTool(s, toolDef{name: "copy_to_instance", title: "Copy into a sandbox", set: setFiles, v1: true,
		hints: replaces, task: true, // overwrites guest files
		about: "Copy a host file or folder into an instance. Returns local_path, remote_path and status."}, s.copyTo)
	addTool(s, toolDef{name: "copy_from_instance", title: "Copy out of a sandbox", set: setFiles, v1: true,
		hints: replaces, task: true, // overwrites host files
		about: "Copy a file or folder out of an instance to the host. Returns the paths, status and what was " +
			"skipped (links leading out, protected paths)."}, s.copyFrom)
	addTool(s, toolDef{name: "sync_workspace_to_instance", title: "Sync the workspace into a sandbox",
		set: setFiles, v1: true, hints: replaces, // deletes guest files the host folder lacks
		about: "Make a guest folder hold what a host folder holds (minus excludes); a re-sync sends only changes. " +
			"Returns files_sent, files_unchanged, files_deleted and archive_bytes."}, s.syncTo)
	addTool(s, toolDef{name: "sync_instance_to_workspace", title: "Sync a sandbox folder back", set: setFiles, v1: true,
		hints: replaces, task: true, // overwrites host files
		about: "Copy a guest folder back into the workspace. Returns the paths, status and what was skipped."},
		s.syncFrom)
	addTool(s, toolDef{name: "collect_artifacts", title: "Collect artifacts", set: setFiles, v1: true,
		hints: hints{destructive: true}, task: true, // a name taken twice over is overwritten (v1's i-NAME)
		args: map[string]argRule{"remote_paths": {"minItems": 1}}, // sandbox.Collect refuses none
		about: "Copy guest paths into a host folder, v1's naming on collisions. Returns artifacts (each path and " +
			"where it went) and what was skipped."}, s.collect)
	addTool(s, toolDef{name: "validate_workspace_config", title: "Validate the workspace config",
		set: setWorkspace, v1: true, hints: readOnly,
		about: "Resolve a workspace's layered .sandboxforge.toml (with optional overrides). Returns valid, every " +
			"problem as diagnostics (key and message) and the effective config."}, s.validate)
	addTool(s, toolDef{name: "prepare_workspace", title: "Prepare a sandbox's workspace", set: setWorkspace, v1: true,
		hints: converges, task: true, unrecorded: true, // recreates containers, rewrites env keys in workspace files
		about: "Converge everything an instance's workspace declares for it: VM, container runtime, services, " +
			"compose stack. Returns runtime_ready, docker_command, services and their readiness, connection_env " +
			"(secrets redacted) and workspace_paths."}, s.prepareWorkspace)
	addTool(s, toolDef{name: "plan", title: "Plan the workspace's sandboxes", set: setWorkspace, hints: readOnly,
		about: "Show what apply would change in a workspace. Returns plan, its actions each with its cause, and " +
			"text, the plan as sbf plan prints it."}, s.plan)
	addTool(s, toolDef{name: "apply", title: "Apply the workspace's sandboxes", set: setWorkspace,
		hints: converges, task: true, unrecorded: true, // deletes undeclared and expired sandboxes
		about: "Converge a workspace to its desired state (acquiring or renewing leases). Returns applied, the " +
			"plan it executed and each sandbox's state after it."}, s.apply)
	addTool(s, toolDef{name: "get_desired_state", title: "Show the desired state", set: setWorkspace, hints: readOnly,
		about: "Read a workspace's resolved desired state. Returns config, its sources and managed_overrides " +
			"(leases, ad-hoc sandboxes)."}, s.desiredState)
	addTool(s, toolDef{name: "start_background_task", title: "Start a background task", set: setSessions, v1: true,
		hints: runsCode,
		about: "Start a command detached in an instance; it outlives this call, sbf restarts and dropped " +
			"connections. Returns task_id (for get_task_status, get_task_logs, stop_task), pid and log_path."},
		s.startTask)
	addTool(s, toolDef{name: "get_task_status", title: "Get a task's status", set: setSessions, v1: true, hints: readOnly,
		about: "Report on a background task. Returns its status, exit_code, pid and times."}, s.taskStatus)
	addTool(s, toolDef{name: "get_task_logs", title: "Get a task's logs", set: setSessions, v1: true, hints: readOnly,
		args: map[string]argRule{"cursor": atLeast(0), "max_bytes": bounds(1, sandbox.MaxLogRead), "wait_ms": waitMS()},
		about: "Read a background task's output. Returns logs, its last tail lines, or with a cursor the output " +
			"from that byte offset, next_cursor and done."}, s.taskLogs)
	addTool(s, toolDef{name: "stop_task", title: "Stop a task", set: setSessions, v1: true,
		hints: replaces, // signals the task's process group
		about: "Stop a background task's whole process group (TERM, or KILL with force). Returns its status and " +
			"exit_code."}, s.stopTask)
	addTool(s, toolDef{name: "start_session", title: "Start an exec session", set: setSessions, hints: runsCode,
		args: map[string]argRule{"timeout_seconds": atLeast(1)},
		about: "Start a command in an instance as a session that outlives this call: write to its stdin, read its " +
			"output after a cursor, signal it, close it. Idle sessions end on their own. Returns session_id, " +
			"which the other session tools take, and its status."}, s.startSession)
	addTool(s, toolDef{name: "read_session", title: "Read an exec session's output", set: setSessions, hints: readOnly,
		args: map[string]argRule{"cursor": atLeast(0), "max_bytes": bounds(1, sandbox.MaxSessionRead),
			"wait_ms": waitMS()},
		about: "Read a session's output after a cursor, waiting up to wait_ms for some. Returns events (stdout " +
			"and stderr in order, each with seq and offset), next_cursor, and done and exit once the command " +
			"has ended and everything was read."}, s.readSession)
	addTool(s, toolDef{name: "write_session", title: "Write to an exec session's stdin", set: setSessions,
		hints: runsCode, // input to an arbitrary command
		about: "Write UTF-8 text or base64 bytes to a session's stdin; close_stdin ends it. Returns " +
			"bytes_written."}, s.writeSession)
	addTool(s, toolDef{name: "signal_session", title: "Signal an exec session", set: setSessions,
		hints: hints{destructive: true},
		args:  map[string]argRule{"signal": enum(signalNames()...)},
		about: "Send a signal to every process of a session's command. Returns the signal and how it was " +
			"delivered."}, s.signalSession)
	addTool(s, toolDef{name: "close_session", title: "Close an exec session", set: setSessions, hints: replaces,
		about: "End a session: its command is killed if it still runs, its output is dropped. Returns closed and " +
			"its exit."}, s.closeSession)
	addTool(s, toolDef{name: "move_path", title: "Move a guest path", set: setFiles,
		hints: hints{destructive: true}, // with overwrite, replaces dst; moving again finds no src
		args:  map[string]argRule{"src": guestPath(), "dst": guestPath()},
		about: "Move or rename a guest file, link or folder inside an instance. Returns src, dst and moved."},
		s.movePath)
	addTool(s, toolDef{name: "copy_path", title: "Copy a guest path", set: setFiles,
		hints: hints{destructive: true}, // with overwrite, replaces dst
		args:  map[string]argRule{"src": guestPath(), "dst": guestPath()},
		about: "Copy a guest file, link or folder inside an instance, or into another instance of the same " +
			"workspace (dst_instance_id), bounded by the operator's copy ceiling. Returns src, dst and copied."},
		s.copyPath)
	addTool(s, toolDef{name: "path_exists", title: "Say whether a guest path exists", set: setFiles, hints: readOnly,
		args: map[string]argRule{"path": guestPath()},
		about: "Say whether a guest path exists (a dangling link too). Returns exists and type (file, dir, link " +
			"or other)."}, s.pathExists)
	addTool(s, toolDef{name: "read_file", title: "Read a guest file", set: setFiles, hints: readOnly,
		args: map[string]argRule{"encoding": enum("utf8", "base64"), "offset": atLeast(0),
			"limit": bounds(1, sandbox.MaxReadLimit), "path": guestPath()},
		about: "Read a guest file (or a piece of it: offset, limit) as UTF-8 text or base64. Returns content, " +
			"size, truncated and next_offset."}, s.readFile)
	addTool(s, toolDef{name: "write_file", title: "Write a guest file", set: setFiles,
		hints: replaces, // replaces the file
		// A write's decoded bytes are bounded (the description says so); its
		// characters are never more than its bytes, so maxLength is the bound
		// JSON Schema can state (multi-byte text may still be refused under it).
		args: map[string]argRule{"encoding": enum("utf8", "base64"), "content": longest(sandbox.MaxWriteBytes),
			"path": guestPath()},
		about: "Create or replace a guest file atomically, with its mode. Returns bytes_written and mode."}, s.writeFile)
	addTool(s, toolDef{name: "list_files", title: "List a guest folder", set: setFiles, hints: readOnly,
		args: map[string]argRule{"limit": bounds(1, sandbox.MaxListLimit), "path": guestPath()},
		about: "List a guest folder (everything below it with recursive). Returns entries (path, type, size, " +
			"mode, modified), count and truncated."}, s.listFiles)
	addTool(s, toolDef{name: "stat_path", title: "Inspect a guest path", set: setFiles, hints: readOnly,
		args: map[string]argRule{"path": guestPath()},
		about: "Describe a guest path. Returns exists and, when it does, its type, size, mode, modified and link " +
			"target."}, s.statPath)
	addTool(s, toolDef{name: "remove_path", title: "Remove a guest path", set: setFiles, hints: replaces,
		args:  map[string]argRule{"path": guestPath()},
		about: "Remove a guest file, link or folder (recursive for a non-empty folder). Returns removed."}, s.removePath)
	addTool(s, toolDef{name: "make_dir", title: "Make a guest folder", set: setFiles, hints: hints{idempotent: true},
		args:  map[string]argRule{"path": guestPath()},
		about: "Create a guest folder (and its parents, by default). Returns path and created."}, s.makeDir)
	addTool(s, toolDef{name: "docker_build", title: "Build a Docker image", set: setDocker, v1: true,
		hints: makesVM, task: true, // adds an image (a tag moves to it); pulls bases
		about: "Build an image in an instance, reusing the [build] cached image when it matches the workspace's " +
			"git state. Returns image_tag, cache_hit and the build's exit_code, stdout and stderr."}, s.dockerBuild)
	addTool(s, toolDef{name: "docker_run", title: "Run a container", set: setDocker, v1: true,
		hints: runsCode, // an arbitrary command with workspace volumes
		about: "Run a container in an instance (detached by default). Returns container (its id) and the " +
			"command's exit_code, stdout and stderr."}, s.dockerRun)
	addTool(s, toolDef{name: "docker_exec", title: "Exec in a container", set: setDocker, v1: true, hints: runsCode,
		args:  map[string]argRule{"timeout_seconds": atLeast(1)},
		about: "Run a command in a container of an instance. Returns exit_code, stdout, stderr and timed_out."},
		s.dockerExec)
	addTool(s, toolDef{name: "docker_logs", title: "Read a container's logs", set: setDocker, v1: true, hints: readOnly,
		args:  map[string]argRule{"tail": atLeast(0)},
		about: "Read a container's output. Returns it as stdout and stderr."}, s.dockerLogs)
	addTool(s, toolDef{name: "docker_compose", title: "Run docker compose", set: setDocker, v1: true,
		hints: runsCode, task: true, // down removes containers; up pulls
		args: map[string]argRule{"action": enum("build", "down", "exec", "logs", "ps", "pull", "restart", "stop",
			"up"), "tail": atLeast(0)},
		about: "Run docker compose in an instance; up and restart of the stack sbf converges go through the " +
			"engine. Returns the command's exit_code, stdout and stderr, and project_dir."}, s.dockerCompose)
	addTool(s, toolDef{name: "docker_ps", title: "List containers", set: setDocker, v1: true, hints: readOnly,
		about: "List an instance's containers. Returns docker ps's output as stdout."}, s.dockerPs)
	addTool(s, toolDef{name: "docker_images", title: "List images", set: setDocker, v1: true, hints: readOnly,
		about: "List an instance's images. Returns docker images' output as stdout."}, s.dockerImages)
	addTool(s, toolDef{name: "docker_cleanup", title: "Clean up Docker", set: setDocker, v1: true,
		hints: replaces, // prunes
		args:  map[string]argRule{"mode": enum("safe", "aggressive")},
		about: "Prune stopped containers and unused images (and more with mode aggressive). Returns the prune's " +
			"output."}, s.dockerCleanup)
	addTool(s, toolDef{name: "validate_image", title: "Validate a Docker image", set: setDocker, v1: true,
		hints: readOnly, task: true,
		args: map[string]argRule{"checks": validateImageChecks()},
		about: "Judge an image against the workspace's git state and dependencies. Returns valid, recommendation " +
			"(reuse, warn, rebuild or fail) and the reasons."}, s.validateImage)
	addTool(s, toolDef{name: "snapshot_instance", title: "Snapshot a sandbox", set: setSnapshots,
		hints: adds, task: true, // a new snapshot each call; a taken name is refused
		args: map[string]argRule{"name": snapshotName()},
		about: "Take a snapshot (name) of an instance's VM: its disk, and its memory where the backend keeps that " +
			"(Lima QEMU). SNAPSHOT_UNSUPPORTED on backends without snapshots. Returns the snapshot's name, " +
			"created_at and status."}, s.snapshotOp(reconcile.SnapshotCreate))
	addTool(s, toolDef{name: "list_snapshots", title: "List snapshots", set: setSnapshots,
		hints: readOnly, // asks the backend; writes nothing
		about: "List an instance's snapshots. Returns snapshots (name, created_at, size_bytes when known) and " +
			"count."}, s.listSnapshots)
	addTool(s, toolDef{name: "restore_snapshot", title: "Restore a snapshot", set: setSnapshots,
		hints: replaces, task: true, // discards what was written since
		args: map[string]argRule{"name": snapshotName()},
		about: "Bring an instance's VM back to a snapshot; what was written since is lost. Returns the snapshot's " +
			"name and status."}, s.snapshotOp(reconcile.SnapshotRestore))
	addTool(s, toolDef{name: "delete_snapshot", title: "Delete a snapshot", set: setSnapshots, hints: replaces,
		args:  map[string]argRule{"name": snapshotName()},
		about: "Delete one of an instance's snapshots. Returns its name and status."},
		s.snapshotOp(reconcile.SnapshotDelete))
	addTool(s, toolDef{name: "export_snapshot", title: "Export a snapshot", set: setSnapshots,
		hints: adds, task: true, // a new host file; an existing one is refused, never replaced
		args: map[string]argRule{"name": snapshotName()},
		about: "Write one of an instance's snapshots into a new host file (local_path), which outlives the " +
			"instance and which sbf never deletes. Lima: the disk only, not the memory. Returns local_path and " +
			"status."}, s.portOp(reconcile.SnapshotExport))
	addTool(s, toolDef{name: "import_snapshot", title: "Import a snapshot", set: setSnapshots,
		hints: adds, task: true, // a new snapshot each call; a taken name is refused
		args: map[string]argRule{"name": snapshotName()},
		about: "Make a host file written by export_snapshot (same backend) a new snapshot (name) of an instance; " +
			"restore_snapshot then brings the VM to it. The VM's current disk is kept. Returns the snapshot's " +
			"name and status."}, s.portOp(reconcile.SnapshotImport))
	addTool(s, toolDef{name: "clone_instance", title: "Clone a sandbox", set: setSnapshots,
		hints: makesVM, task: true, unrecorded: true, // a new VM each call, like create_instance
		args: map[string]argRule{"ttl_minutes": atLeast(1), "snapshot": snapshotName()},
		about: "Make a new instance, with its own lease, whose VM starts as a copy of this instance's disk (or of " +
			"its snapshot). Counts against the instance cap. Returns the new instance_id and its expires_at."},
		s.cloneInstance)
	addTool(s, toolDef{name: "fork_instance", title: "Fork a running sandbox", set: setSnapshots,
		hints: makesVM, task: true, unrecorded: true, // new VMs each call, like clone_instance
		args: map[string]argRule{"count": bounds(1, reconcile.MaxForkChildren)},
		about: "Make count running instances from this running instance's memory, without a boot, each with its " +
			"own disk, identity and lease. Counts against the instance cap (all or none). FORK_UNSUPPORTED names " +
			"the next step where a backend cannot. Returns the children."},
		s.forkInstance)
	addTool(s, toolDef{name: "expose_port", title: "Expose a guest port", set: setObserve,
		hints: hints{idempotent: true}, // a second call answers the forward already there
		args:  map[string]argRule{"port": bounds(1, 65535), "host_port": bounds(0, 65535)},
		about: "Forward a guest port to a port on this host's loopback (127.0.0.1) until unexpose_port, the " +
			"sandbox's end or the server's. Returns host_port and url."}, s.exposePort)
	addTool(s, toolDef{name: "unexpose_port", title: "Unexpose a guest port", set: setObserve, hints: replaces,
		args:  map[string]argRule{"port": bounds(1, 65535)},
		about: "Stop forwarding a guest port that expose_port forwarded. Returns the forward's status and counts."},
		s.unexposePort)
	addTool(s, toolDef{name: "list_exposed_ports", title: "List exposed ports", set: setObserve, hints: readOnly,
		about: "List the guest ports this server forwards. Returns ports, each as expose_port answers it, and " +
			"count."}, s.listExposedPorts)
	addTool(s, toolDef{name: "get_instance_stats", title: "Get a sandbox's resource use", set: setObserve, hints: readOnly,
		about: "Read a running instance's CPU, load, memory, disk, uptime and processes (from its /proc and df). " +
			"Returns them, its lease left and its last command."}, s.instanceStats)
	addTool(s, toolDef{name: "health", title: "Check sandbox health", set: setObserve, hints: readOnly,
		about: "Check every sandbox of a workspace that holds a lease: is its VM running, does it answer a " +
			"command, how long is its lease. Returns healthy and each sandbox's phase, drift and problems."},
		s.health)
	addTool(s, toolDef{name: "get_history", title: "Get the call history", set: setObserve,
		hints: readOnly, unrecorded: true,
		args: map[string]argRule{"limit": bounds(1, maxHistoryLimit)},
		about: "The recent commands and tool calls that acted on a workspace's sandboxes, from MCP and the sbf " +
			"CLI (secrets redacted). Returns events (tool or command, time, outcome each) and count."}, s.getHistory)
	addTool(s, toolDef{name: "get_egress_log", title: "Read the egress log", set: setObserve, hints: readOnly,
		args: map[string]argRule{"tail": bounds(1, 1000)}, // egress.go's bound
		about: "Read what the instance's network policy let through or refused: its egress proxy's decisions " +
			"(allowed or denied, host, port, bytes, reason), oldest first. Returns entries and count; a driver " +
			"that enforces no policy answers POLICY_UNSUPPORTED."}, s.egressLog)
	addTool(s, toolDef{name: "enable_toolset", title: "List or enable toolsets", set: setAlways,
		hints: hints{idempotent: true}, // changes only what this session's tools/list holds
		args:  map[string]argRule{"toolset": enum(toolsetNames()...)},
		about: "More tools than tools/list shows are grouped in toolsets. Without toolset, list them; with " +
			"one, add its tools to this session's tools/list (notifications/tools/list_changed follows). " +
			"Returns toolsets, each with its tools and whether it is listed."}, s.enableToolset)
}
