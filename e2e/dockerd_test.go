//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// testDockerdSocket checks on the real guest what the loop's cheap look
// relies on (drivers/guest/dockerapi.go): the lima driver opens the guest's
// Docker socket over its SSH connection, as the guest's user (in the docker
// group by the image), and dockerd lists the stack's containers with the
// compose labels the look reads. The logic is tested with a fake dockerd;
// this is sshd's permission and dockerd's answer.
func testDockerdSocket(t *testing.T, w *ws) {
	drv, tgt := engineTarget(t, w)
	defer drv.Close() // cancels the master's forward and removes its folder
	sockets := drivers.CapabilitiesOf(drv).DialSocket
	if sockets == nil {
		t.Fatal("the lima driver opens no guest sockets: the cheap look would run docker ps")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return sockets.DialGuestSocket(ctx, tgt.Instance, "/var/run/docker.sock")
		}}}
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
		`http://docker/containers/json?all=1&filters={"label":["com.docker.compose.project"]}`, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("asking the guest's dockerd through its socket: %v", err)
	}
	defer resp.Body.Close()
	var list []struct {
		Labels map[string]string
		State  string
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("dockerd answered %s: %v", resp.Status, err)
	}
	record("dockerd's container list through its socket", start)
	services := map[string]string{}
	for _, c := range list {
		if c.Labels["com.docker.compose.config-hash"] != "" {
			services[c.Labels["com.docker.compose.service"]] = c.State
		}
	}
	if services["web"] != "running" || services["idle"] != "running" {
		t.Errorf("dockerd listed the stack's services as %v (want web and idle running)", services)
	}
}
