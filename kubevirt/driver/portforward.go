package driver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	kv "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/external"
)

// The guest's sshd is reached through the API server's port-forward to the VM's
// virt-launcher pod (pods/portforward, as kubectl port-forward): it works wherever the
// kubeconfig does, on a laptop or in the cluster, exposes the guest's sshd to nobody
// else (a Service would open it to every pod of the cluster), needs no KubeVirt
// subresource (virt-api), and leaves no object to clean up. KubeVirt's masquerade
// binding forwards connections the pod makes to its own loopback to the guest, which is
// where a pod port-forward lands. sbf keeps one SSH connection per VM open, so the
// tunnel is set up once per VM per sbf process.

// forwarder keeps one local port per VM forwarded to its sshd.
type forwarder struct {
	d     *Driver
	mu    sync.Mutex
	ports map[string]*forward
}

type forward struct {
	port string
	stop chan struct{}
	done chan struct{}
}

func newForwarder(d *Driver) *forwarder { return &forwarder{d: d, ports: map[string]*forward{}} }

// SSH makes instance's sshd reachable on this host's loopback and says where.
func (d *Driver) SSH(ctx context.Context, instance string) (external.SSHEndpoint, error) {
	port, err := d.fwd.open(ctx, instance)
	if err != nil {
		return external.SSHEndpoint{}, fmt.Errorf("reaching %s's sshd: %w", instance, err)
	}
	return external.SSHEndpoint{Host: "127.0.0.1", Port: port, User: d.guest.User}, nil
}

func (f *forwarder) open(ctx context.Context, instance string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fw, ok := f.ports[instance]; ok {
		select {
		case <-fw.done: // the tunnel ended (the pod went); make another
		default:
			return fw.port, nil
		}
	}
	pod, err := f.d.launcherPod(ctx, instance)
	if err != nil {
		return "", err
	}
	fw, err := f.d.forwardTo(pod)
	if err != nil {
		return "", err
	}
	f.ports[instance] = fw
	return fw.port, nil
}

func (f *forwarder) drop(instance string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fw, ok := f.ports[instance]; ok {
		close(fw.stop)
		delete(f.ports, instance)
	}
}

// launcherPod is the running virt-launcher pod of instance's running VMI.
func (d *Driver) launcherPod(ctx context.Context, instance string) (*corev1.Pod, error) {
	if _, err := d.get(ctx, instance); err != nil {
		return nil, err
	}
	vmi, err := d.vmi(ctx, instance)
	if err != nil {
		return nil, err
	}
	if vmi == nil || vmi.Status.Phase != kv.Running {
		return nil, fmt.Errorf("%s is not running", instance)
	}
	var pods corev1.PodList
	err = d.c.List(ctx, &pods, client.InNamespace(d.set.Namespace),
		client.MatchingLabels{kv.CreatedByLabel: string(vmi.UID)})
	if err != nil {
		return nil, d.apiError("listing the virt-launcher pods of "+vmi.Name, err)
	}
	for i := range pods.Items {
		if pods.Items[i].Status.Phase == corev1.PodRunning && pods.Items[i].DeletionTimestamp == nil {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no running virt-launcher pod for VirtualMachineInstance %s: %w", vmi.Name, drivers.ErrNotFound)
}

// forwardTo opens a loopback port forwarded to pod's port 22 through the API server:
// WebSocket first, SPDY for API servers that do not take it (as kubectl does).
func (d *Driver) forwardTo(pod *corev1.Pod) (*forward, error) {
	u, err := url.Parse(d.cfg.Host)
	if err != nil {
		return nil, err
	}
	u.Path = fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/portforward", u.Path, pod.Namespace, pod.Name)
	transport, upgrader, err := spdy.RoundTripperFor(d.cfg)
	if err != nil {
		return nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	if ws, err := portforward.NewSPDYOverWebsocketDialer(u, d.cfg); err == nil {
		dialer = portforward.NewFallbackDialer(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	fw := &forward{stop: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:22"}, fw.stop, ready,
		io.Discard, io.Discard)
	if err != nil {
		return nil, err
	}
	failed := make(chan error, 1)
	go func() {
		defer close(fw.done)
		failed <- pf.ForwardPorts()
	}()
	select {
	case <-ready:
	case err := <-failed:
		if strings.Contains(err.Error(), " is forbidden: ") {
			// client-go's port-forward flattens the API server's refusal into text.
			return nil, fmt.Errorf("port-forwarding to pod %s: %w", pod.Name, d.forbidden(err.Error()))
		}
		return nil, d.apiError("port-forwarding to pod "+pod.Name, err)
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		close(fw.stop)
		return nil, fmt.Errorf("port-forwarding to pod %s: no local port (%v)", pod.Name, err)
	}
	fw.port = strconv.Itoa(int(ports[0].Local))
	return fw, nil
}
