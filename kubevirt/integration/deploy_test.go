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

// manifests reads the objects kustomization.yaml lists, as kustomize would place them in
// namespace.
func manifests(t *testing.T, namespace string) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join("..", "..", "deploy", "kubevirt")
	var k struct {
		Resources []string `json:"resources"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err == nil {
		err = sigsyaml.Unmarshal(data, &k)
	}
	if err != nil || len(k.Resources) == 0 {
		t.Fatalf("kustomization.yaml: %v (%d resources)", err, len(k.Resources))
	}
	var out []*unstructured.Unstructured
	for _, f := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
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
			if u.GetKind() == "ClusterRoleBinding" {
				subjects, _, _ := unstructured.NestedSlice(obj, "subjects")
				for _, s := range subjects {
					s.(map[string]any)["namespace"] = namespace
				}
				unstructured.SetNestedSlice(obj, subjects, "subjects")
			}
			out = append(out, u)
		}
	}
	return out
}

// deploy/kubevirt, applied server-side (dry run) into a namespace that enforces Pod
// Security "restricted", is admitted without a warning; so are the pods its Deployments
// would make (this API server runs no controller-manager to make them, so they are
// created, dry run, from the Deployments' templates).
func TestTheManifestsAreAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	s := newSpace(t, quick)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cluster.Config)
	ns, err := cs.CoreV1().Namespaces().Get(ctx, s.ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	ns.Labels["pod-security.kubernetes.io/warn"] = "restricted"
	if _, err := cs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	warn := &warnings{}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.WarningHandler = warn
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(
		discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	dry := []string{metav1.DryRunAll}

	// A pod that breaks the profile is refused here: the namespace does enforce it. Pod
	// Security admission reads namespaces from an informer, which sees the label shortly
	// after the update (under load, not at once).
	root := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: s.ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	refused := func() error {
		_, err := cs.CoreV1().Pods(s.ns).Create(ctx, root, metav1.CreateOptions{DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
			return fmt.Errorf("a pod with no security context was not refused: %v", err)
		}
		return nil
	}
	err = refused()
	for deadline := time.Now().Add(30 * time.Second); err != nil && time.Now().Before(deadline); err = refused() {
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}

	pods := 0
	for _, u := range manifests(t, s.ns) {
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		var r dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			u.SetNamespace(s.ns)
			r = dyn.Resource(m.Resource).Namespace(s.ns)
		}
		if _, err := r.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "sbf-test", DryRun: dry}); err != nil {
			t.Errorf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() != "Deployment" {
			continue
		}
		tmpl, _, _ := unstructured.NestedMap(u.Object, "spec", "template")
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pod); err != nil {
			t.Fatal(err)
		}
		pod.Name, pod.Namespace = u.GetName()+"-pod", s.ns
		if _, err := cs.CoreV1().Pods(s.ns).Create(ctx, &pod, metav1.CreateOptions{DryRun: dry}); err != nil {
			t.Errorf("the pod of Deployment %s: %v", u.GetName(), err)
		}
		pc := pod.Spec.Containers[0]
		if pc.LivenessProbe == nil || pc.ReadinessProbe == nil {
			t.Errorf("Deployment %s has no liveness or readiness probe", u.GetName())
		}
		pods++
	}
	if pods != 2 {
		t.Errorf("%d Deployments in deploy/kubevirt; want the loop's and the controller's", pods)
	}
	warn.mu.Lock()
	defer warn.mu.Unlock()
	for _, w := range warn.got {
		t.Errorf("warning: %s", w)
	}
}

// sbf-kubevirt version names a version even when built without one (go build: the VCS
// revision Go embeds, else "devel"), so a report says what ran.
func TestVersionIsNeverEmpty(t *testing.T) {
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
