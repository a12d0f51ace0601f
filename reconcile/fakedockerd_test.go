package reconcile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
)

// socketGuestSim is guestSim whose guests' dockerd also answers the
// Engine API's container list on its socket, as a guest whose user is in
// the docker group does.
type socketGuestSim struct{ guestSim }

func (g socketGuestSim) DialGuestSocket(_ context.Context, instance, path string) (net.Conn, error) {
	if path != "/var/run/docker.sock" {
		return nil, errors.New("no socket at " + path)
	}
	ours, theirs := net.Pipe()
	go g.answerList(instance, theirs)
	return ours, nil
}

// answerList answers one GET /containers/json for a project's label.
func (g socketGuestSim) answerList(instance string, c net.Conn) {
	defer c.Close()
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	var filters map[string][]string
	json.Unmarshal([]byte(req.URL.Query().Get("filters")), &filters)
	project := strings.TrimPrefix(strings.Join(filters["label"], ""), "com.docker.compose.project=")
	d := g.world.get(instance)
	g.world.mu.Lock()
	d.apiLists++
	type listed struct {
		Labels map[string]string
		State  string
	}
	list := []listed{}
	for svc, c := range d.running[project] {
		list = append(list, listed{State: c.state, Labels: map[string]string{"com.docker.compose.project": project,
			"com.docker.compose.service": svc, "com.docker.compose.config-hash": c.hash}})
	}
	g.world.mu.Unlock()
	body, _ := json.Marshal(list)
	resp := &http.Response{StatusCode: http.StatusOK, ProtoMajor: 1, ProtoMinor: 1, Request: req,
		ContentLength: int64(len(body)), Body: io.NopCloser(bytes.NewReader(body)), Close: true}
	resp.Write(c)
}
