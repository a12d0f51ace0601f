package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/sandboxforge/sbf/kubevirt/internal/kubetest"
)

// warnings collects the API server's warnings (Pod Security's "would violate" among them).
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

// The namespaces deploy/kubevirt names: the controllers' and the VMs'.
const (
	shippedSystemNS = "sbf-system"
	shippedVMsNS    = "sbf-vms"
)

// manifests reads the objects kustomization.yaml lists, with the namespaces they name
// (sbf-system, sbf-vms) renamed to system and vms, the test's. Every namespaced object must
// name its namespace: kubectl would put one that does not in whatever namespace its context
// names.
func manifests(t *testing.T, system, vms string) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join("..", "..", "deploy", "kubevirt")
	var k struct {
		Namespace string   `json:"namespace"`
		Resources []string `json:"resources"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err == nil {
		err = sigsyaml.Unmarshal(data, &k)
	}
	if err != nil || len(k.Resources) == 0 || k.Namespace != "" {
		t.Fatalf("kustomization.yaml: %v (%d resources, namespace %q: want none, which would put the VMs "+
			"and the controllers in one)", err, len(k.Resources), k.Namespace)
	}
	rename := regexp.MustCompile(`\b(` + shippedSystemNS + `|` + shippedVMsNS + `)\b`)
	var out []*unstructured.Unstructured
	for _, f := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		data = rename.ReplaceAllFunc(data, func(m []byte) []byte {
			if string(m) == shippedSystemNS {
				return []byte(system)
			}
			return []byte(vms)
		})
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if obj == nil {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			switch u.GetKind() {
			case "Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
				"ValidatingAdmissionPolicyBinding":
			default:
				if u.GetNamespace() == "" {
					t.Errorf("%s: %s %s names no namespace", f, u.GetKind(), u.GetName())
				}
			}
			out = append(out, u)
		}
	}
	return out
}

// deploy/kubevirt puts the controllers and the VMs in namespaces of their own: applied
// server-side, its Namespaces make the controllers' enforce Pod Security "restricted", and
// there the rest (dry run) is admitted without a warning, and so are the pods its Deployments
// would make (this API server runs no controller-manager to make them, so they are created,
// dry run, from the Deployments' templates); both Deployments act on the VMs' namespace,
// where a VM starts (its launcher pod, which restricted refuses, admitted).
func TestTheManifestsKeepTheVMsApartFromRestrictedControllers(t *testing.T) {
	t.Parallel()
	vms := newSpace(t, quick)
	system := cluster.Namespace(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cluster.Config)
	warn := &warnings{}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.WarningHandler = warn
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(
		discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	dry := []string{metav1.DryRunAll}
	apply := func(u *unstructured.Unstructured, opts metav1.ApplyOptions) {
		t.Helper()
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		var r dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			r = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		opts.FieldManager = "sbf-test"
		if _, err := r.Apply(ctx, u.GetName(), u, opts); err != nil {
			t.Errorf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	objs := manifests(t, system, vms.ns)
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			apply(u, metav1.ApplyOptions{}) // for real: their labels are what is tested
		}
	}
	waitRestricted(t, system)

	pods := 0
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			continue
		}
		apply(u, metav1.ApplyOptions{DryRun: dry})
		if u.GetKind() != "Deployment" {
			continue
		}
		tmpl, _, _ := unstructured.NestedMap(u.Object, "spec", "template")
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pod); err != nil {
			t.Fatal(err)
		}
		if u.GetNamespace() != system {
			t.Errorf("Deployment %s is in %s; want the controllers' namespace", u.GetName(), u.GetNamespace())
		}
		pod.Name, pod.Namespace = u.GetName()+"-pod", u.GetNamespace()
		if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, &pod, metav1.CreateOptions{DryRun: dry}); err != nil {
			t.Errorf("the pod of Deployment %s: %v", u.GetName(), err)
		}
		pc := pod.Spec.Containers[0]
		if pc.LivenessProbe == nil || pc.ReadinessProbe == nil {
			t.Errorf("Deployment %s has no liveness or readiness probe", u.GetName())
		}
		serves := map[string]string{}
		for _, e := range pc.Env {
			serves[e.Name] = e.Value
		}
		if serves["SBF_KUBEVIRT_NAMESPACE"] != vms.ns && serves["SBF_KUBEVIRT_NAMESPACES"] != vms.ns {
			t.Errorf("Deployment %s acts on %v; want the VMs' namespace %s", u.GetName(), serves, vms.ns)
		}
		pods++
	}
	if pods != 2 {
		t.Errorf("%d Deployments in deploy/kubevirt; want the loop's and the controller's", pods)
	}
	warn.mu.Lock()
	for _, w := range warn.got {
		t.Errorf("warning: %s", w)
	}
	warn.mu.Unlock()
	if _, err := newWorkspace(t, vms, "").apply(); err != nil {
		t.Errorf("a VM in the shipped VMs' namespace: %v", err)
	}
}

// waitRestricted waits until ns enforces Pod Security "restricted": a pod that breaks the
// profile is refused. Pod Security admission reads namespaces from an informer, which sees
// a label shortly after it is written (under load, not at once).
func waitRestricted(t *testing.T, ns string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cluster.Config)
	root := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	refused := func() error {
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		_, err := cs.CoreV1().Pods(ns).Create(context.Background(), root, dry)
		if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
			return fmt.Errorf("namespace %s: a pod with no security context was not refused: %v", ns, err)
		}
		return nil
	}
	err := refused()
	for deadline := time.Now().Add(30 * time.Second); err != nil && time.Now().Before(deadline); err = refused() {
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// restrict labels ns to enforce Pod Security "restricted", as a team would label the
// controllers' namespace, and waits until it does.
func restrict(t *testing.T, ns string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cluster.Config)
	got, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if _, err := cs.CoreV1().Namespaces().Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRestricted(t, ns)
}

// sbf-kubevirt version names a version even when built without one (go build: the VCS
// revision Go embeds, else "devel"), so a report says what ran.
func TestVersionIsNeverEmpty(t *testing.T) {
	t.Parallel()
	kubetest.Need(t, cluster) // the binary is built with the cluster
	out, err := exec.Command(plugin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	if len(f) != 4 || f[0] != "sbf-kubevirt" || f[1] == "" || f[2] != "protocol" {
		t.Errorf("sbf-kubevirt version: %q", out)
	}
}
