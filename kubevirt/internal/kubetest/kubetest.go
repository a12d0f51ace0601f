// Package kubetest runs a real kube-apiserver and etcd (controller-runtime's envtest) with
// KubeVirt's CRDs, for the kubevirt driver's tests. The binaries come from
// scripts/kube-test-bins.sh (envtest's own downloads are not reachable here); without
// them the tests fail, saying how to get them, unless SBF_KUBE_SKIP=1 asks to skip: a
// suite that passes green having run nothing is how a broken cache goes unnoticed.
package kubetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// DefaultBins is where scripts/kube-test-bins.sh caches kube-apiserver and etcd.
const DefaultBins = "/var/cache/sandboxforge/kube-1.34.3"

// Bins is the folder holding kube-apiserver and etcd: $SBF_KUBE_BINS, else DefaultBins;
// "" when they are not there.
func Bins() string {
	dir := os.Getenv("SBF_KUBE_BINS")
	if dir == "" {
		dir = DefaultBins
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return ""
		}
	}
	return dir
}

// ReadSources opens every Go source, go.mod and go.sum under root (the
// repository, both modules), so that go test's cache key covers the code of
// the binaries a package's tests build with go build (sbf, sbf-kubevirt), of
// which the test binary links only part: go test records each file it
// opens by size and modification time, and a change to any of them runs the
// tests again rather than replaying a pass.
func ReadSources(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == ".tools" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if n := d.Name(); strings.HasSuffix(n, ".go") || n == "go.mod" || n == "go.sum" {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			return f.Close()
		}
		return nil
	})
}

// Cluster is a running API server with KubeVirt's CRDs.
type Cluster struct {
	Env    *envtest.Environment
	Config *rest.Config // an admin's

	users sync.Mutex // envtest's AddUser is not safe for concurrent use (its CA counts serials)
}

// Start runs the API server, or returns nil and a reason to skip.
func Start() (*Cluster, string, error) {
	bins := Bins()
	if bins == "" {
		return nil, "no kube-apiserver and etcd in $SBF_KUBE_BINS or " + DefaultBins +
			": run scripts/kube-test-bins.sh (a cold build takes ~11 min)", nil
	}
	env := &envtest.Environment{BinaryAssetsDirectory: bins, CRDDirectoryPaths: []string{crdDir()},
		ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		// Start can fail after the API server and etcd run (installing the CRDs): stop what
		// it started, or they outlive the tests.
		if stopErr := env.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping them: %w", stopErr))
		}
		return nil, "", fmt.Errorf("starting kube-apiserver and etcd from %s: %w", bins, err)
	}
	reapAfter(env)
	return &Cluster{Env: env, Config: cfg}, "", nil
}

// reapAfter kills the API server and etcd once this test process is gone however it ended:
// a panicking test exits without Main's Stop, and they would run on. A detached shell waits
// for this process, then kills what names the run's own folders (no other process does).
func reapAfter(env *envtest.Environment) {
	dirs := []string{env.ControlPlane.Etcd.DataDir, env.ControlPlane.APIServer.CertDir}
	script := `while kill -0 "$0" 2>/dev/null; do sleep 1; done; for d in "$@"; do pkill -9 -f -- "=$d( |$)"; done`
	watch := exec.Command("sh", append([]string{"-c", script, strconv.Itoa(os.Getpid())}, dirs...)...)
	watch.SysProcAttr = detached()
	if err := watch.Start(); err == nil {
		go watch.Wait() //nolint:errcheck // it outlives us by design; reaped while we run
	}
}

// SkipEnv, set to 1, lets the tests skip when the binaries are missing.
const SkipEnv = "SBF_KUBE_SKIP"

// Main runs a test package's tests against one cluster, started once. Without the
// binaries it fails the package, unless SkipEnv=1.
// cleanups run before Main exits (os.Exit skips a TestMain's defers); one that returns an
// error fails the package, saying it.
func Main(m *testing.M, c **Cluster, cleanups ...func() error) {
	code := run(m, c)
	for _, f := range cleanups {
		if err := f(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func run(m *testing.M, c **Cluster) int {
	cluster, skip, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cluster == nil {
		if os.Getenv(SkipEnv) != "1" {
			fmt.Fprintln(os.Stderr, "FAIL: the kubevirt tests need a real API server:", skip+
				"; or set "+SkipEnv+"=1 to skip them (they then prove nothing)")
			return 1
		}
		fmt.Println("SKIP kubevirt tests against a real API server ("+SkipEnv+"=1):", skip)
	}
	*c = cluster
	code := m.Run()
	if cluster != nil {
		cluster.Env.Stop()
	}
	return code
}

// Need skips t when there is no cluster.
func Need(t testing.TB, c *Cluster) {
	t.Helper()
	if c == nil {
		t.Skip("no kube-apiserver and " + SkipEnv + "=1: run scripts/kube-test-bins.sh")
	}
}

// crdDir is the module's testdata/crds, found from the folder a package's
// tests run in up to the module's go.mod (under -trimpath, as make test
// builds, a source file's recorded path is not where it is).
func crdDir() string {
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			return filepath.Join(dir, "testdata", "crds")
		}
		if filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	return filepath.Join("testdata", "crds")
}

var seq atomic.Int64

// Namespace makes a fresh namespace for one test.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(c.Config)
	name := fmt.Sprintf("t%d-%s", seq.Add(1), strings.ToLower(strings.NewReplacer("/", "-", "_", "-", " ", "-").
		Replace(t.Name())))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	_, err := cs.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// User provisions a user in groups with no rights but those rules grants in namespace (none
// when rules is nil), and returns its config.
func (c *Cluster) User(t testing.TB, name, namespace string, rules []rbacv1.PolicyRule,
	groups ...string) *rest.Config {
	t.Helper()
	c.users.Lock()
	u, err := c.Env.AddUser(envtest.User{Name: name, Groups: groups}, c.Config)
	c.users.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if rules != nil {
		c.Grant(t, name, name, namespace, rules)
	}
	return u.Config()
}

// Grant gives user what rules grant in namespace: a Role and a RoleBinding, both named role.
func (c *Cluster) Grant(t testing.TB, user, role, namespace string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(c.Config)
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: namespace}, Rules: rules}
	if _, err := cs.RbacV1().Roles(namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: namespace},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Kubeconfig writes cfg as a kubeconfig file, for code that finds its cluster the usual
// way (KUBECONFIG).
func Kubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
