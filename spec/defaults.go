package spec

import (
	"cmp"
	"runtime"
	"time"
)

// Host is what the defaults depend on, kept as a value so tests can
// resolve a spec as macOS, Linux or Windows would.
type Host struct {
	OS   string // runtime.GOOS spelling: linux, darwin, windows
	Arch string // runtime.GOARCH spelling
	// auto and vmType are the linked backends' answer for this host
	// (Backends.Auto): what driver = "auto" names and the default vm_type.
	// Load asks its Options.Backends; With asks others.
	auto, vmType string
}

// CurrentHost describes the machine sbf runs on.
func CurrentHost() Host { return Host{OS: runtime.GOOS, Arch: runtime.GOARCH} }

// With is the host as the backends b see it: which one "auto" names there
// and the vm_type its VMs run by default. Nil b leaves h as it is.
func (h Host) With(b Backends) Host {
	if b != nil {
		h.auto, h.vmType = b.Auto(h.OS, h.Arch)
	}
	return h
}

// DefaultVMType is the vm_type of the "auto" backend's VMs on the host
// when no layer names one ("": none, or no backends were asked).
func (h Host) DefaultVMType() string { return h.vmType }

// ResolveDriver turns "auto" into the backend this host runs; it stays
// "auto" when no linked backend wants to be (the engine then says so).
func (h Host) ResolveDriver(driver string) string {
	if driver != "" && driver != "auto" {
		return driver
	}
	return cmp.Or(h.auto, "auto")
}

// Defaults returns the built-in layer: SandboxForge v1's defaults plus
// sbf's own keys.
func Defaults(h Host) Config {
	return Config{
		VM: VM{
			Shape: Shape{
				Driver:    "auto",
				CPUs:      1,
				MemoryGiB: 2,
				DiskGiB:   15,
				VMType:    h.DefaultVMType(),
				Template:  "template:docker",
				Emulation: "auto",
			},
			Mounts: []string{},
		},
		Docker: Docker{InstallIfMissing: true},
		Build: Build{
			EnableBuildkit: true,
			MinFreeGiB:     3,
			Prebuilt: Prebuilt{
				Enabled:    true,
				Validation: "strict",
				StalenessCheck: StalenessCheck{
					CheckGitCommit:    true,
					CheckDependencies: true,
					CheckAgeThreshold: Duration(24 * time.Hour),
					OnStale:           "rebuild",
				},
			},
			ImageCaching: ImageCaching{Enabled: true, Strategy: "smart", TagFormat: "{image}:{git_short}-{deps_hash}"},
			StalenessDetection: StalenessDetection{
				CheckGitCommit:   true,
				CheckGitDirty:    true,
				CheckDeps:        []string{"pyproject.toml", "uv.lock"},
				CheckDockerfile:  true,
				MaxAgeThreshold:  Duration(24 * time.Hour),
				OnStale:          "rebuild",
				OnDirtyWorkspace: "warn_and_rebuild",
				OnMissing:        "build",
			},
		},
		Infra: Infra{
			EnsureNetwork:            true,
			BridgeToComposeNetwork:   true,
			IncludeServicesByDefault: true,
			NetworkNamePrefix:        "lima-net",
			MySQL: MySQL{
				Enabled: true, Image: "mysql:8.0", RootPassword: NewSecret("root"), Database: "app",
				ContainerNamePrefix: "lima-mysql", ExtraEnv: Env{}, InjectEnvTo: ".env",
			},
			Redis: Redis{
				Enabled: true, Image: "redis:7-alpine", ContainerNamePrefix: "lima-redis",
				ExtraEnv: Env{}, InjectEnvTo: ".env",
			},
		},
		Network: Network{Egress: "allow", Allow: []string{}},
		Sync: Sync{
			ExcludePatterns: []string{".venv", ".venv/**", ".pytest_cache", ".pytest_cache/**",
				".uv-cache", ".uv-cache/**", "__pycache__", "__pycache__/**"},
			Protect: []string{".envrc"},
		},
		Compose: Compose{Files: []string{"compose.yaml"}, EnvFiles: []string{}, Profiles: []string{}},
		Lease: Lease{
			DefaultTTL:   Duration(30 * time.Minute),
			MaxTTL:       Duration(2 * time.Hour),
			MaxLifetime:  Duration(24 * time.Hour),
			MaxInstances: 3,
			KeepRecords:  Duration(7 * 24 * time.Hour),
		},
		Sandboxes: map[string]Sandbox{},
		Pools:     map[string]Pool{},
		Leases:    map[string]LeaseRecord{},
	}
}
