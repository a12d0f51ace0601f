package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// A result past the budget (a guest printing megabytes of control bytes,
// which JSON escapes sixfold) is cut to fit, head kept, and says so; a
// small one is left as it is.
func TestAResultFitsTheResponseBudget(t *testing.T) {
	small := map[string]any{"stdout": "hi", "exit_code": 0}
	if got := fitResponse(small); got.(map[string]any)["response_truncated"] != nil {
		t.Errorf("a small result was marked truncated: %v", got)
	}
	for name, stdout := range map[string]string{
		"text":     strings.Repeat("x", 8<<20),
		"controls": strings.Repeat("\x00", 8<<20),
		"runes":    strings.Repeat("é", 3<<20),
	} {
		out := fitResponse(map[string]any{"stdout": stdout, "stderr": "tail", "exit_code": 0,
			"result": map[string]any{"logs": strings.Repeat("y", 2<<20)}})
		raw, _ := json.Marshal(out)
		m := out.(map[string]any)
		if len(raw) > responseBudget || m["response_truncated"] != true || m["stderr"] != "tail" {
			t.Errorf("%s: %d bytes, truncated %v", name, len(raw), m["response_truncated"])
		}
		if s := m["stdout"].(string); !strings.HasPrefix(stdout, s) || !utf8.ValidString(s) {
			t.Errorf("%s: the kept stdout is not the output's head", name)
		}
	}
}
