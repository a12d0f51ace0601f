// Package spec loads the desired state of a workspace: the layered
// .sandboxforge.toml documents, validated strictly and reported with exact
// positions.
package spec

import "time"

// Config is the resolved document. Struct tags drive everything the package
// does with it: `toml` names the key (and `json` mirrors it for output),
// `enum`, `check` and `nullable` define what a value may be, and `doc`
// feeds the JSON Schema. Keys of SandboxForge v1 keep their names and
// defaults so existing files load unchanged.
type Config struct {
	VM        VM                     `toml:"vm" json:"vm" doc:"Defaults for every sandbox's virtual machine."`
	Docker    Docker                 `toml:"docker" json:"docker" doc:"The container runtime inside each sandbox."`
	Build     Build                  `toml:"build" json:"build" doc:"Image build caching and staleness checks (SandboxForge v1)."`
	Infra     Infra                  `toml:"infra" json:"infra" doc:"MySQL and Redis services run inside sandboxes that ask for them."`
	Sync      Sync                   `toml:"sync" json:"sync" doc:"What workspace sync copies into a sandbox."`
	Compose   Compose                `toml:"compose" json:"compose" doc:"The Docker Compose stack converged inside sandboxes with compose = true."`
	Lease     Lease                  `toml:"lease" json:"lease" doc:"Lease lengths and the instance cap."`
	Network   Network                `toml:"network" json:"network" doc:"What guests may reach on the network, enforced outside the guest; each sandbox's [sandboxes.NAME.network] starts from it."`
	Sandboxes map[string]Sandbox     `toml:"sandboxes" json:"sandboxes" check:"sandbox_name" doc:"Named sandboxes. Each inherits [vm] and may override any of its keys."`
	Pools     map[string]Pool        `toml:"pool" json:"pool" check:"sandbox_name" doc:"Warm pools: each keeps size booted, idle VMs of one shape (its driver and [vm] shape keys), which a sandbox of the same shape adopts instead of booting one."`
	Leases    map[string]LeaseRecord `toml:"leases" json:"leases" managed:"true" check:"sandbox_name" doc:"Written by sbf in .sandboxforge/overrides.toml: each sandbox's lease."`
}

// LeaseRecord is a sandbox's lease: it exists while now < ExpiresAt.
type LeaseRecord struct {
	AcquiredAt time.Time `toml:"acquired_at" json:"acquired_at" doc:"When the lease was first acquired; max_lifetime counts from here."`
	ExpiresAt  time.Time `toml:"expires_at" json:"expires_at" doc:"When the sandbox expires and its VM is deleted."`
}

// Shape is what a VM is made of: the keys [vm], each sandbox and each pool
// share (a pool's spares take a sandbox's shape), declared once.
type Shape struct {
	Driver    string  `toml:"driver" json:"driver" enum:"@drivers" doc:"Backend: auto picks lima on Linux and macOS, hyperv on Windows. sim is a simulator for tests and demos."`
	CPUs      int     `toml:"cpus" json:"cpus" check:"positive" doc:"Virtual CPUs."`
	MemoryGiB float64 `toml:"memory_gib" json:"memory_gib" check:"positive" doc:"Memory in GiB."`
	DiskGiB   float64 `toml:"disk_gib" json:"disk_gib" check:"positive" doc:"Disk size in GiB."`
	Arch      string  `toml:"arch" json:"arch" nullable:"true" doc:"Guest architecture (x86_64, aarch64); empty means the host's."`
	VMType    string  `toml:"vm_type" json:"vm_type" nullable:"true" enum:"qemu,vz,wsl2" doc:"Lima vmType; defaults to vz on macOS and qemu on Linux."`
	Template  string  `toml:"template" json:"template" check:"nonempty" doc:"Lima template the VM's image comes from (v1: template:NAME). Host mounts are never inherited from it."`
	Image     Image   `toml:"image" json:"image" doc:"The guest image; when empty, the template's images are used."`
	Emulation string  `toml:"emulation" json:"emulation" enum:"auto,never,always" doc:"Software emulation when hardware virtualization (KVM) cannot run guests: auto uses it then (about 10x slower), never fails instead, always uses it."`
}

// VM describes one virtual machine. [vm] holds the defaults; each sandbox
// starts from them.
type VM struct {
	Shape  `toml:",inline"`
	TTL    Duration `toml:"ttl" json:"ttl" nullable:"true" doc:"Lease length (30m, 2h, 7d); empty means [lease] default_ttl."`
	Mounts []string `toml:"mounts" json:"mounts" check:"nonempty_items" doc:"Host paths shared into the guest, as PATH[:GUEST_PATH][:rw] (read-only unless :rw). None by default."`
	// Backends are the backends' own tables ([vm.kubevirt]), which each
	// backend declares; Config's TOML and MarshalJSON render them.
	Backends BackendTables `toml:"-" json:"-"`
}

// Image is what a VM boots: a cloud image (location, optional digest) or,
// for direct kernel boot, a raw root disk with its kernel and initrd.
// Relative paths are relative to the workspace root.
type Image struct {
	Location      string `toml:"location" json:"location" check:"image_location" doc:"URL or path of the disk image, or sbf:debian-12 for the image sbf builds on this machine (sbf image build)."`
	Digest        string `toml:"digest" json:"digest" doc:"Expected digest of location, such as sha256:…"`
	Kernel        string `toml:"kernel" json:"kernel" doc:"Kernel for direct boot (URL or path); needs location to be a raw root disk."`
	KernelCmdline string `toml:"kernel_cmdline" json:"kernel_cmdline" doc:"Kernel command line for direct boot."`
	Initrd        string `toml:"initrd" json:"initrd" doc:"Initial ramdisk for direct boot (URL or path)."`
}

// Sandbox is one named VM: the [vm] keys it overrides plus what runs in it.
type Sandbox struct {
	VM       `toml:",inline"`
	Compose  bool     `toml:"compose" json:"compose" doc:"Converge the [compose] stack inside this sandbox."`
	Services []string `toml:"services" json:"services" enum:"mysql,redis" doc:"Services from [infra] to run in this sandbox."`
	Runtime  bool     `toml:"runtime" json:"runtime" doc:"Converge the container runtime (Docker, Compose v2) even without compose or services; sbf up and create_instance set it for the ad-hoc sandboxes they make."`
	Ports    []string `toml:"ports" json:"ports" check:"port_forward" doc:"Port forwards HOST:GUEST from the host's loopback into the guest."`
	Network  Network  `toml:"network" json:"network" doc:"This sandbox's network policy; keys it does not set come from [network]."`
	Adopt    string   `toml:"adopt,omitempty" json:"adopt,omitempty" managed:"true" doc:"Written by sbf in .sandboxforge/overrides.toml when it imports a VM: the existing backend instance this sandbox takes as its VM instead of creating one."`
	CloneOf  string   `toml:"clone_of,omitempty" json:"clone_of,omitempty" managed:"true" doc:"Written by sbf in .sandboxforge/overrides.toml when it clones a sandbox (sbf clone, clone_instance): the sandbox whose VM's disk this sandbox's VM starts from."`
	// FromSnapshot makes the sandbox's VM, when created, a copy of a
	// snapshot sbf took of another sandbox of the workspace.
	FromSnapshot string `toml:"from_snapshot,omitempty" json:"from_snapshot,omitempty" nullable:"true" check:"snapshot_ref" doc:"Create this sandbox's VM from a snapshot (sbf snapshot create) instead of its image: SANDBOX/NAME, or NAME when only one sandbox has a snapshot of that name. Used when the VM is created; the snapshot's sandbox must still have it then, on the same driver."`
}

// Docker configures the runtime inside the guest.
type Docker struct {
	InstallIfMissing bool `toml:"install_if_missing" json:"install_if_missing" doc:"Install Docker in the guest when it is missing."`
}

// Compose names the stack converged inside sandboxes.
type Compose struct {
	Files            []string `toml:"files" json:"files" check:"nonempty_items" doc:"Compose files, relative to the workspace root."`
	ProjectDirectory string   `toml:"project_directory" json:"project_directory" doc:"Folder the compose files' relative paths start from; default: the workspace root."`
	EnvFiles         []string `toml:"env_files" json:"env_files" check:"nonempty_items" doc:"Files with variables for interpolation, besides the project's .env."`
	Profiles         []string `toml:"profiles" json:"profiles" check:"nonempty_items" doc:"Compose profiles to enable."`
	UseProcessEnv    bool     `toml:"use_process_env" json:"use_process_env" doc:"Let sbf's own environment take part in interpolation (off: only .env and env_files)."`
}

// Lease bounds how long sandboxes live and how many may exist.
type Lease struct {
	DefaultTTL   Duration `toml:"default_ttl" json:"default_ttl" check:"positive" doc:"Lease length when neither the sandbox nor the request names one."`
	MaxTTL       Duration `toml:"max_ttl" json:"max_ttl" check:"positive" doc:"Longest single lease or extension; at most the operator's ceiling ([policy] max_ttl of the global config, MAX_TTL_MINUTES): a larger value is lowered to it, with a warning."`
	MaxLifetime  Duration `toml:"max_lifetime" json:"max_lifetime" check:"positive" doc:"Longest a lease may reach through extensions, from when it was acquired; at most the operator's ceiling ([policy] max_lifetime of the global config)."`
	MaxInstances int      `toml:"max_instances" json:"max_instances" check:"positive" doc:"Most sbf instances alive on this host at once, across workspaces; at most the operator's ceiling ([policy] max_instances of the global config, MAX_INSTANCES)."`
	KeepRecords  Duration `toml:"keep_records" json:"keep_records" check:"positive" doc:"How long the state file keeps the record of a destroyed or expired sandbox before dropping it."`
}

// Sync configures workspace sync into a sandbox (v1).
type Sync struct {
	IncludeGit      bool     `toml:"include_git" json:"include_git" doc:"Copy .git too."`
	ExcludePatterns []string `toml:"exclude_patterns" json:"exclude_patterns" doc:"Glob patterns left out of sync."`
	Protect         []string `toml:"protect" json:"protect" doc:"Host paths (glob patterns: a name matches at any depth, a pattern with / from the workspace root) that nothing copied back from a sandbox may write, besides sbf's configuration and state and .git, which are always protected."`
}

// Infra holds the v1 service keys.
type Infra struct {
	EnsureNetwork            bool   `toml:"ensure_network" json:"ensure_network" doc:"Create the services' Docker network."`
	BridgeToComposeNetwork   bool   `toml:"bridge_to_compose_network" json:"bridge_to_compose_network" doc:"Attach the compose project to the services' network."`
	IncludeServicesByDefault bool   `toml:"include_services_by_default" json:"include_services_by_default" doc:"Start services when a tool call does not say."`
	NetworkName              string `toml:"network_name" json:"network_name" nullable:"true" doc:"Network name, used verbatim; empty derives one from network_name_prefix."`
	NetworkNamePrefix        string `toml:"network_name_prefix" json:"network_name_prefix" check:"nonempty" doc:"Prefix of the derived network name."`
	MySQL                    MySQL  `toml:"mysql" json:"mysql" doc:"The MySQL service."`
	Redis                    Redis  `toml:"redis" json:"redis" doc:"The Redis service."`
}

// MySQL is the v1 [infra.mysql] table.
type MySQL struct {
	Enabled             bool   `toml:"enabled" json:"enabled" doc:"Allow sandboxes to run MySQL."`
	Image               string `toml:"image" json:"image" check:"nonempty" doc:"Container image."`
	RootPassword        Secret `toml:"root_password" json:"root_password" check:"nonempty" doc:"Root password; ${VAR} reads it from the environment."`
	Database            string `toml:"database" json:"database" check:"nonempty" doc:"Database created at start."`
	ContainerNamePrefix string `toml:"container_name_prefix" json:"container_name_prefix" check:"nonempty" doc:"Prefix of the container name."`
	ExtraEnv            Env    `toml:"extra_env" json:"extra_env" doc:"Extra environment for the container; values whose names look secret (…PASSWORD, …TOKEN, …KEY) are never shown."`
	InjectEnvTo         string `toml:"inject_env_to" json:"inject_env_to" nullable:"true" doc:"File (relative to the workspace) that receives the connection variables; empty disables."`
}

// Redis is the v1 [infra.redis] table.
type Redis struct {
	Enabled             bool   `toml:"enabled" json:"enabled" doc:"Allow sandboxes to run Redis."`
	Image               string `toml:"image" json:"image" check:"nonempty" doc:"Container image."`
	ContainerNamePrefix string `toml:"container_name_prefix" json:"container_name_prefix" check:"nonempty" doc:"Prefix of the container name."`
	ExtraEnv            Env    `toml:"extra_env" json:"extra_env" doc:"Extra environment for the container; values whose names look secret (…PASSWORD, …TOKEN, …KEY) are never shown."`
	InjectEnvTo         string `toml:"inject_env_to" json:"inject_env_to" nullable:"true" doc:"File (relative to the workspace) that receives the connection variables; empty disables."`
}
