package cli

import (
	"strings"
	"testing"
)

// --metrics listens on loopback only (as the MCP endpoint, unless
// --allow-non-loopback with a token), and needs the MCP server.
func TestMetricsFlagRefusals(t *testing.T) {
	w := newSimWorkspace(t, simSpec)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "127.0.0.1:0", "--metrics", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"serve", "--loop-only", "--metrics", "127.0.0.1:0"}, "--metrics"},
	} {
		if r := w.run(nil, c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("sbf %v: exit %d\n%s", c.args, r.code, r.stderr)
		}
	}
}
