package mcpserver

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// messageSize is what a result takes in its message, measured by
// rendering it as mcp-go does: the structured content, and the text
// content holding the same JSON as a string.
func messageSize(t *testing.T, raw string) int {
	t.Helper()
	text, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	return len(raw) + len(text)
}

// A result past the budget (a guest printing megabytes of control bytes,
// which JSON escapes sixfold and its text copy sevenfold) is cut to fit by
// its rendered size, heads kept, and says so; a small one is left as it
// is.
func TestAResultFitsTheResponseBudget(t *testing.T) {
	testutil.WithoutRace(t, "it renders 8 MiB results in one goroutine")
	raw, err := render(map[string]any{"stdout": "hi", "exit_code": 0})
	if err != nil || strings.Contains(raw, "response_truncated") {
		t.Errorf("a small result: %s %v", raw, err)
	}
	for name, stdout := range map[string]string{
		"text":     strings.Repeat("x", 8<<20),
		"controls": strings.Repeat("\x01", 8<<20),
		"escape":   strings.Repeat("\x1b[31m", 2<<20),
		"quotes":   strings.Repeat(`"\`, 4<<20),
		"html":     strings.Repeat("<&>", 3<<20),
		"runes":    strings.Repeat("é\u2028", 2<<20),
		"invalid":  strings.Repeat("\xff", 8<<20),
	} {
		raw, err := render(map[string]any{"stdout": stdout, "stderr": "tail", "exit_code": 0,
			"result": map[string]any{"logs": strings.Repeat("y", 2<<20)}})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		size := messageSize(t, raw)
		if size > responseBudget || size < responseBudget-64<<10 || m["response_truncated"] != true ||
			m["stderr"] != "tail" || m["response_budget_bytes"] != float64(responseBudget) {
			t.Errorf("%s: %d bytes in the message, truncated %v, stderr %.20q", name, size, m["response_truncated"],
				m["stderr"])
		}
		kept := m["stdout"].(string)
		if name != "invalid" && (!strings.HasPrefix(stdout, kept) || !utf8.ValidString(kept)) {
			t.Errorf("%s: the kept stdout is not the output's head", name)
		}
		if len(kept) == 0 {
			t.Errorf("%s: nothing of stdout kept", name)
		}
	}
}

// Two long streams share what the rest of the result leaves: neither is
// dropped for the other.
func TestLongStringsShareTheBudget(t *testing.T) {
	raw, err := render(map[string]any{"stdout": strings.Repeat("o", 6<<20), "stderr": strings.Repeat("e", 3<<20),
		"note": strings.Repeat("n", 256<<10)})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	json.Unmarshal([]byte(raw), &m)
	out, errs, note := len(m["stdout"]), len(m["stderr"]), len(m["note"])
	if note != 256<<10 || out != errs || out < 512<<10 {
		t.Errorf("kept stdout %d, stderr %d, note %d bytes", out, errs, note)
	}
}

// The size is computed, not rendered, and the rendering is sbf's own: both
// must be what encoding/json writes, byte for byte, whatever the strings
// hold.
func TestCostIsTheRenderedSize(t *testing.T) {
	alphabet := []string{"a", "\"", "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1b", "\x7f", "<", ">", "&",
		"é", "\u2028", "\u2029", "\ufffd", "\xff", "\xe2\x80", "💥", "/", " "}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		once, _ := json.Marshal(s)
		twice, _ := json.Marshal(string(once))
		if got, want := stringCost(s), len(once)+len(twice)-2; got != want {
			t.Fatalf("stringCost(%q) = %d, rendered %d", s, got, want)
		}
		half := stringCost(s) / 2
		if got := headByCost(s, half); !strings.HasPrefix(s, got) || got != "" && stringCost(got) > half {
			t.Fatalf("headByCost(%q) = %q", s, got)
		}
		v := map[string]any{"s": s, "n": 1.5, "list": []any{s, true, nil, map[string]any{s: s}, []any(nil)},
			"typed": []string{s}, s + "k": map[string]any(nil)}
		raw, _ := json.Marshal(v)
		cost, _ := walkCost(v, nil)
		if got, want := cost+textQuotes, messageSize(t, string(raw)); got != want {
			t.Fatalf("walkCost(%v) = %d, rendered %d", v, got, want)
		}
		if got, err := render(v); err != nil || got != string(raw) {
			t.Fatalf("render(%v) = %s, encoding/json wrote %s (%v)", v, got, raw, err)
		}
	}
}

// A read an answer cannot carry whole (4 MiB of text, 1 MiB of control
// characters, 4 MiB as base64) comes back shorter with next_offset
// moved back to match: reading on from it gives the file exactly.
func TestReadsPastTheBudgetPageExactly(t *testing.T) {
	testutil.WithoutRace(t, "it pages 9 MiB through one session, a call at a time")
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	f.ok("run_command", map[string]any{"instance_id": id, "command": "head -c 4194304 /dev/zero | tr '\\000' x > " +
		"text; head -c 1048576 /dev/zero | tr '\\000' '\\001' > controls; head -c 4194304 /dev/urandom > bin"})
	for _, c := range []struct{ path, encoding string }{{"text", "utf8"}, {"controls", "utf8"}, {"bin", "base64"}} {
		var got []byte
		offset, reads := 0.0, 0
		for reads = 0; reads < 20; reads++ {
			r := f.ok("read_file", map[string]any{"instance_id": id, "path": c.path, "offset": offset,
				"limit": 4 << 20, "encoding": c.encoding})
			if r["response_truncated"] != nil {
				t.Fatalf("%s: the answer was cut: %.200v", c.path, r)
			}
			data := []byte(r["content"].(string))
			if c.encoding == "base64" {
				data, _ = base64.StdEncoding.DecodeString(r["content"].(string))
			}
			got = append(got, data...)
			if offset = r["next_offset"].(float64); r["truncated"] != true {
				break
			}
		}
		size := map[string]int{"text": 4 << 20, "controls": 1 << 20, "bin": 4 << 20}[c.path]
		sum := f.ok("run_command", map[string]any{"instance_id": id, "command": "sha256sum " + c.path})["stdout"]
		if len(got) != size || reads < 1 || !strings.HasPrefix(sum.(string), fmt.Sprintf("%x", sha256.Sum256(got))) {
			t.Errorf("%s: read %d of %d bytes in %d reads, not the file", c.path, len(got), size, reads+1)
		}
	}
}
