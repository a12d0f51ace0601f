package guest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// The cheap look asks the guest's dockerd for each project's containers
// over its socket (the Engine API's container list) where it can, in place
// of `docker ps`: the docker CLI is a large Go program whose start costs the
// guest ~0.8 s of CPU under emulation, once a minute per workspace with a
// stack, while dockerd answers a list from memory. The shell command that
// reads the bundle markers then starts no process at all.

// dockerSocket is where the plain `docker` command finds its daemon when no
// DOCKER_HOST or context says otherwise: the probe's "docker" prefix.
const dockerSocket = "/var/run/docker.sock"

// maxListBytes bounds one project's list as read from the guest, which
// writes it: a list of a dozen containers is a few tens of KiB.
const maxListBytes = 4 << 20

// SocketDialer is a Runner that can also open a unix socket in the guest
// (an SSH streamlocal channel: the guest's sshd connects as its user).
type SocketDialer interface {
	DialSocket(ctx context.Context, path string) (net.Conn, error)
}

// apiContainer is what the list says of a container that the look reads.
type apiContainer struct {
	Labels map[string]string
	State  string
}

// listByAPI lists each project's containers through dockerd's API, as
// psLine's `docker ps -a` lists them. ok is false when the runtime is not
// the plain `docker` (through sudo the socket is root's), the runner opens
// no sockets, or any answer is not a clean list: the caller runs
// `docker ps` then.
func listByAPI(ctx context.Context, r Runner, docker string,
	projects []*Project) (containers map[string]map[string]Container, ok bool) {
	sd, can := r.(SocketDialer)
	if !can || docker != "docker" {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return sd.DialSocket(ctx, dockerSocket) }
	client := &http.Client{
		Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true, MaxResponseHeaderBytes: 64 << 10},
		// the guest answers: a redirect is not a list
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	containers = map[string]map[string]Container{}
	for _, p := range projects {
		listed, ok := listProject(ctx, client, p.Name)
		if !ok {
			return nil, false
		}
		containers[p.Name] = listed
	}
	return containers, true
}

// listProject asks for every container (running or not) labelled as
// project's, and reads each one's service, config hash and state.
func listProject(ctx context.Context, client *http.Client, project string) (map[string]Container, bool) {
	filters, _ := json.Marshal(map[string][]string{"label": {"com.docker.compose.project=" + project}})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		"http://docker/containers/json?all=1&filters="+url.QueryEscape(string(filters)), nil)
	if err != nil {
		return nil, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxListBytes+1))
	var list []apiContainer
	if err != nil || resp.StatusCode != http.StatusOK || len(data) > maxListBytes || json.Unmarshal(data, &list) != nil {
		return nil, false
	}
	listed := map[string]Container{}
	for _, c := range list {
		svc := c.Labels["com.docker.compose.service"]
		hash := c.Labels["com.docker.compose.config-hash"]
		if c.Labels["com.docker.compose.project"] != project || svc == "" || hash == "" || c.State == "" {
			return nil, false
		}
		if _, twice := listed[svc]; twice {
			return nil, false
		}
		listed[svc] = Container{Hash: hash, State: c.State}
	}
	return listed, true
}
