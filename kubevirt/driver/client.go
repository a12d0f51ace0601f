package driver

import (
	"fmt"
	"os"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
)

// Scheme holds the types the driver reads and writes: KubeVirt's VMs and VMIs, pods
// (port-forward), namespaces, PVCs, NetworkPolicies ([network]), access reviews and the self
// review (created-by).
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, authzv1.AddToScheme,
		authnv1.AddToScheme, kv.AddToScheme, networkingv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // the schemes are fixed at build time
		}
	}
	return s
}

// RESTConfig finds the cluster the usual way: $KUBECONFIG, else the service account of
// the pod sbf runs in, else ~/.kube/config.
func RESTConfig(getenv func(string) string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kc := getenv("KUBECONFIG"); kc != "" {
		rules.ExplicitPath = ""
		rules.Precedence = splitList(kc)
	} else if getenv("KUBERNETES_SERVICE_HOST") != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", unreachable(fmt.Errorf("in-cluster configuration: %w", err))
		}
		return cfg, "in-cluster service account", nil
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", &drivers.UnavailableError{Driver: Name, Reason: "no cluster configured: " + err.Error(),
			ProbableCause: "backend_not_configured", NextSteps: []string{
				"point KUBECONFIG at a kubeconfig for a cluster with KubeVirt, or write ~/.kube/config",
				"inside a pod, run with a service account bound to deploy/kubevirt/rbac.yaml's Role"}}
	}
	raw, _ := cc.RawConfig()
	return cfg, "kubeconfig context " + raw.CurrentContext, nil
}

// ContextNamespace is the namespace the kubeconfig's current context names: "" when it
// names none, or when sbf runs on a pod's service account (whose namespace the Deployment
// passes as SBF_KUBEVIRT_NAMESPACE).
func ContextNamespace(getenv func(string) string) string {
	if getenv("KUBECONFIG") == "" && getenv("KUBERNETES_SERVICE_HOST") != "" {
		return ""
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kc := getenv("KUBECONFIG"); kc != "" {
		rules.ExplicitPath = ""
		rules.Precedence = splitList(kc)
	}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return ""
	}
	if c := raw.Contexts[raw.CurrentContext]; c != nil {
		return c.Namespace
	}
	return ""
}

// NewClient is a controller-runtime client on cfg with the driver's scheme.
func NewClient(cfg *rest.Config) (client.Client, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		// client-go's default (5 per second, 10 at once) spaces a List of VMs and VMIs
		// 100 ms apart; sbf's calls come in short bursts, so allow what kubectl does.
		cfg.QPS, cfg.Burst = 50, 300
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, unreachable(err)
	}
	return c, nil
}

func splitList(v string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(v); i++ {
		if i == len(v) || v[i] == os.PathListSeparator {
			if i > start {
				out = append(out, v[start:i])
			}
			start = i + 1
		}
	}
	return out
}
