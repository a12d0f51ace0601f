package external

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"path/filepath"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

// KubeVirt is the kubevirt driver's plugin, built from the kubevirt/ module of sbf's source.
var KubeVirt = Program{
	Driver: "kubevirt",
	Binary: "sbf-kubevirt",
	EnvVar: "SBF_KUBEVIRT_DRIVER",
	Build:  "build the plugin: make sbf-kubevirt (it writes bin/sbf-kubevirt beside bin/sbf)",
	Env: []string{"KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT",
		"SBF_KUBEVIRT_NAMESPACE", "SBF_KUBEVIRT_IMAGE", "SBF_KUBEVIRT_STORAGE_CLASS", "SBF_KUBEVIRT_INSTANCETYPE",
		"SBF_KUBEVIRT_PREFERENCE", "SBF_KUBEVIRT_START_TIMEOUT", "SBF_KUBEVIRT_SSH_USER", "SBF_KUBEVIRT_POLL",
		// Set by sbf-kubevirt serve-leader for the loop it runs: the plugin then writes to
		// the cluster only while the Lease proves this replica leads (kubevirt/leader.Fence).
		"SBF_LEADER_LEASE", "SBF_LEADER_IDENTITY", "SBF_LEADER_RENEW_DEADLINE"},
}

// kubeVirtSettings are [vm.kubevirt] (and [sandboxes.NAME.kubevirt]): what a sandbox's
// VirtualMachine is made from. Unset keys fall back to the plugin's own settings
// (SBF_KUBEVIRT_NAMESPACE, SBF_KUBEVIRT_IMAGE, …). Each replaces the VM: Reconfigure changes
// only its size.
var kubeVirtSettings = []drivers.Setting{
	{Key: "namespace", Effect: drivers.Replace,
		Doc: "Namespace the workspace's VMs live in; the same for every sandbox. Default sbf-<workspace tag>."},
	{Key: "image", Effect: drivers.Replace, Doc: "containerDisk the VM boots (REGISTRY/IMAGE:TAG); " +
		"image.location = \"docker://REF\" says the same per sandbox."},
	{Key: "storage_class", Effect: drivers.Replace, Doc: "Give the VM a persistent root disk of disk_gib " +
		"(a DataVolume imported from the image) in this StorageClass instead of an ephemeral containerDisk."},
	{Key: "instancetype", Effect: drivers.Replace,
		Doc: "VirtualMachineClusterInstancetype that sizes the VM instead of cpus and memory_gib."},
	{Key: "preference", Effect: drivers.Replace, Doc: "VirtualMachineClusterPreference applied to the VM."},
}

func init() {
	drivers.Register(drivers.Registration{
		Name: KubeVirt.Driver,
		// Per workspace: its VMs are labelled with the workspace's id and, by default,
		// live in a namespace of the workspace's own.
		PerWorkspace: true,
		Remote:       true,
		// Lifecycle, labels, leases and network policies (a NetworkPolicy per VM) are the
		// plugin's; commands, copies, terminals and port forwards go over SSH through the
		// embedded sshexec.Pool.
		Zero:        (*Driver)(nil),
		Settings:    kubeVirtSettings,
		SettingsDoc: "What the kubevirt driver makes the VirtualMachine from; ignored by other drivers.",
		New: func(ctx context.Context, env drivers.Env) (drivers.Driver, error) {
			return launch(ctx, KubeVirt, env)
		},
		Diagnose: func(ctx context.Context, env drivers.Env, specs []drivers.Spec) drivers.Diagnosis {
			return diagnose(ctx, KubeVirt, env, specs)
		},
	})
}

// launch starts prog for the workspace env names, with the guests' SSH key.
func launch(ctx context.Context, prog Program, env drivers.Env) (*Driver, error) {
	key := keyPath(env, prog.Driver)
	pub, err := ensureKey(key)
	if err != nil {
		return nil, err
	}
	h := Hello{SSHPublicKey: pub, SSHUser: env.Getenv("SBF_KUBEVIRT_SSH_USER")}
	if env.Workspace != "" {
		if root, id, err := workspaceIdentity(env.Workspace); err == nil {
			h.WorkspaceRoot, h.WorkspaceID = root, id
		}
	}
	return Launch(ctx, prog, env, Session{Driver: prog.Driver, Hello: h, KeyPath: key, Clock: env.Clock})
}

// diagnose is sbf doctor's view: the plugin's own checks, or why there is no plugin.
func diagnose(ctx context.Context, prog Program, env drivers.Env, specs []drivers.Spec) drivers.Diagnosis {
	d, err := launch(ctx, prog, env)
	if err != nil {
		diag := drivers.Diagnosis{Driver: prog.Driver, Summary: "cannot run VMs here yet: see the failed checks"}
		diag.Add(drivers.CheckFromError("plugin", err))
		diag.Finish()
		return diag
	}
	defer d.Close()
	diag, err := d.Diagnose(ctx, specs)
	if err != nil {
		diag = drivers.Diagnosis{Driver: prog.Driver, Summary: "the plugin could not run its checks"}
		diag.Add(drivers.CheckFromError("plugin", err))
		diag.Finish()
	}
	diag.Checks = append([]drivers.Check{{Name: "plugin", Status: drivers.CheckOK, Detail: prog.Binary + " answers"}},
		diag.Checks...)
	return diag
}

// workspaceIdentity is spec.WorkspaceIdentity's id, which this package cannot import (the
// spec package's tests link every driver): "ws_" + 12 hex digits of the SHA-1 of the
// absolute, symlink-resolved root. A test holds the two together.
func workspaceIdentity(root string) (abs, id string, err error) {
	abs, err = filepath.Abs(root)
	if err == nil {
		abs, err = hostpath.Real(abs)
	}
	if err != nil {
		return "", "", err
	}
	sum := sha1.Sum([]byte(abs))
	return abs, "ws_" + hex.EncodeToString(sum[:])[:12], nil
}
