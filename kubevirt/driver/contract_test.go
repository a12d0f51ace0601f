package driver

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/drivertest"
	"github.com/sandboxforge/sbf/drivers/external"
	"github.com/sandboxforge/sbf/kubevirt/internal/fakevirt"
	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

var cluster *kubetest.Cluster

func TestMain(m *testing.M) { kubetest.Main(m, &cluster) }

const testKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHbHNmVU8wBjVk0Ym7cNfWbTX6fZ6cbdnYjx2mYgm9ZX test"

// world is a namespace of the test cluster with the stand-in KubeVirt running in it,
// and a driver acting there as an admin.
type world struct {
	ns string
	d  *Driver
	c  client.Client
}

func newWorld(t *testing.T, o fakevirt.Options) world {
	t.Helper()
	kubetest.Need(t, cluster)
	ns := cluster.Namespace(t)
	c, err := NewClient(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fakevirt.Run(ctx, c, ns, o)
	return world{ns: ns, c: c, d: driverFor(t, ns, c)}
}

func driverFor(t *testing.T, ns string, c client.Client) *Driver {
	t.Helper()
	env := map[string]string{"SBF_KUBEVIRT_NAMESPACE": ns}
	d, err := New(Options{Getenv: func(k string) string { return env[k] }, Config: cluster.Config, Client: c,
		Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Hello(context.Background(), external.Hello{ProtocolVersion: external.ProtocolVersion,
		WorkspaceID: "ws_c0ffee00aabb", SSHPublicKey: testKey}); err != nil {
		t.Fatal(err)
	}
	return d
}

// addForeign makes a VM the way a person would: no sbf labels.
func (w world) addForeign(t *testing.T, name string) {
	t.Helper()
	halted := kv.RunStrategyHalted
	vm := &kv.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns,
		Labels: map[string]string{"team": "someone-else"}},
		Spec: kv.VirtualMachineSpec{RunStrategy: &halted, Template: &kv.VirtualMachineInstanceTemplateSpec{}}}
	if err := w.c.Create(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
}

// foreignExists reports whether that VM is there, as it was made: halted, unlabelled, its
// spec never changed (generation 1).
func (w world) foreignExists(t *testing.T, name string) bool {
	var vm kv.VirtualMachine
	if err := w.c.Get(context.Background(), types.NamespacedName{Namespace: w.ns, Name: name}, &vm); err != nil {
		return false
	}
	return vm.Generation == 1 && vm.DeletionTimestamp == nil && vm.Labels[LabelManagedBy] == "" &&
		*vm.Spec.RunStrategy == kv.RunStrategyHalted
}

// The driver keeps the engine's contract against a real API server serving KubeVirt's
// CRDs, with the stand-in playing KubeVirt's controllers.
func TestContract(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) drivertest.World {
			w := newWorld(t, fakevirt.Options{StartDelay: 100 * time.Millisecond, StopDelay: 50 * time.Millisecond})
			return drivertest.World{Driver: w.d, MarksOwnership: true, Imports: true,
				AddForeign: w.addForeign, ForeignExists: w.foreignExists}
		},
		Spec: func(name string) drivers.Spec {
			return drivers.Spec{Name: name, CPUs: 2, MemoryGiB: 2, DiskGiB: 10, Arch: "x86_64", VMType: "qemu"}
		},
	})
}
