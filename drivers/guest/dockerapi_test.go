package guest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// withSocket is a scripted runner whose guest socket is a daemon of the
// test's: each project's list as dockerd would answer it.
type withSocket struct {
	scripted
	daemon string // the host socket standing for the guest's
	mu     sync.Mutex
	dialed []string
	asked  []string // the filters of each list asked for
}

func (w *withSocket) DialSocket(ctx context.Context, path string) (net.Conn, error) {
	w.mu.Lock()
	w.dialed = append(w.dialed, path)
	w.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, "unix", w.daemon)
}

// fakeDockerd serves GET /containers/json from lists (by project), or
// answers with raw when it is set.
func fakeDockerd(t *testing.T, w *withSocket, lists map[string][]apiContainer, raw func(http.ResponseWriter)) {
	w.daemon = filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", w.daemon)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		filters := r.URL.Query().Get("filters")
		w.mu.Lock()
		w.asked = append(w.asked, filters)
		w.mu.Unlock()
		if raw != nil {
			raw(rw)
			return
		}
		var f map[string][]string
		json.Unmarshal([]byte(filters), &f)
		project := strings.TrimPrefix(f["label"][0], "com.docker.compose.project=")
		if r.URL.Path != "/containers/json" || r.URL.Query().Get("all") != "1" {
			http.Error(rw, "not this", http.StatusNotFound)
			return
		}
		json.NewEncoder(rw).Encode(lists[project])
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

func composed(project, svc, hash, state string) apiContainer {
	return apiContainer{State: state, Labels: map[string]string{"com.docker.compose.project": project,
		"com.docker.compose.service": svc, "com.docker.compose.config-hash": hash, "other": "x"}}
}

// Where dockerd's socket can be reached, the cheap look asks it and runs
// only shell builtins in the guest: no docker CLI. Whatever the API says is
// read as docker ps's lines were; an answer that is not a clean list sends
// the look back to docker ps.
func TestObserveRecordedAsksDockerdThroughItsSocket(t *testing.T) {
	api := &Project{Name: "sbf-api", Bundle: "b1"}
	svc := &Project{Name: "sbf-api-services", Bundle: "s1"}
	recorded := map[string]map[string]string{"sbf-api": {"web": "h1", "idle": "h2"}, "sbf-api-services": {"mysql": "m1"}}
	type lists = map[string][]apiContainer
	cleanLists := func() lists {
		return lists{
			"sbf-api": {composed("sbf-api", "web", "h1", "running"),
				composed("sbf-api", "idle", "h2", "running")},
			"sbf-api-services": {composed("sbf-api-services", "mysql", "m1", "running")},
		}
	}
	clean := cleanLists()
	const bundles = "@@bundle sbf-api b1\n@@bundle sbf-api-services s1\n@@ps\n"
	const ps = "sbf-api web h1 running\nsbf-api idle h2 running\nsbf-api-services mysql m1 running\n"
	look := func(t *testing.T, docker string, answer lists, raw func(http.ResponseWriter)) (*withSocket, bool) {
		t.Helper()
		w := &withSocket{scripted: scripted{replies: []reply{
			{match: "docker ps", res: out(bundles+ps, 0)}, {match: "@@ps", res: out(bundles, 0)}}}}
		fakeDockerd(t, w, answer, raw)
		states, ok := ObserveRecorded(context.Background(), w, docker, []*Project{api, svc}, recorded)
		if ok && (len(states) != 2 || states["sbf-api"].Containers["web"] != Container{Hash: "h1", State: "running"}) {
			t.Errorf("states %+v", states)
		}
		return w, ok
	}
	w, ok := look(t, "docker", clean, nil)
	if !ok || len(w.ran) != 1 || strings.Contains(w.ran[0], "docker") {
		t.Fatalf("through the socket: trusted %v, ran %q", ok, w.ran)
	}
	if len(w.dialed) != 2 || w.dialed[0] != "/var/run/docker.sock" ||
		w.asked[0] != `{"label":["com.docker.compose.project=sbf-api"]}` {
		t.Errorf("dialled %q, asked %q", w.dialed, w.asked)
	}
	changed := map[string]func(lists){
		"container recreated": func(l lists) { l["sbf-api"][0].Labels["com.docker.compose.config-hash"] = "h3" },
		"container stopped":   func(l lists) { l["sbf-api"][1].State = "exited" },
		"container gone":      func(l lists) { l["sbf-api"] = l["sbf-api"][:1] },
		"an orphan": func(l lists) {
			l["sbf-api"] = append(l["sbf-api"], composed("sbf-api", "extra", "h4", "running"))
		},
	}
	for why, change := range changed {
		l := cleanLists()
		change(l)
		if w, ok := look(t, "docker", l, nil); ok || strings.Contains(strings.Join(w.ran, ""), "docker ps") {
			t.Errorf("%s: trusted %v, ran %q", why, ok, w.ran)
		}
	}
	notAList := map[string]func(http.ResponseWriter){
		"an error": func(rw http.ResponseWriter) { http.Error(rw, "no", http.StatusInternalServerError) },
		"a redirect": func(rw http.ResponseWriter) {
			rw.Header().Set("Location", "/containers/json?all=1")
			rw.WriteHeader(http.StatusFound)
		},
		"not JSON": func(rw http.ResponseWriter) { rw.Write([]byte("<html>")) },
		"past the bound": func(rw http.ResponseWriter) {
			rw.Write([]byte(`[` + strings.Repeat(" ", maxListBytes) + `]`))
		},
		"no service label":  func(rw http.ResponseWriter) { rw.Write([]byte(`[{"State":"running","Labels":{}}]`)) },
		"another project's": func(rw http.ResponseWriter) { json.NewEncoder(rw).Encode(clean["sbf-api-services"]) },
		"listed twice": func(rw http.ResponseWriter) {
			json.NewEncoder(rw).Encode([]apiContainer{composed("sbf-api", "web", "h1", "running"),
				composed("sbf-api", "web", "h1", "running")})
		},
	}
	for why, raw := range notAList {
		if w, ok := look(t, "docker", nil, raw); !ok || !strings.Contains(strings.Join(w.ran, ""), "docker ps -a") {
			t.Errorf("%s: the look did not fall back to docker ps: trusted %v, ran %q", why, ok, w.ran)
		}
	}
	if w, ok := look(t, "sudo -n docker", clean, nil); !ok || len(w.dialed) != 0 ||
		!strings.Contains(w.ran[0], "sudo -n docker ps -a") {
		t.Errorf("through sudo the socket is root's: trusted %v, dialled %q, ran %q", ok, w.dialed, w.ran)
	}
}
