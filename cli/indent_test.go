package cli

import (
	"bytes"
	"encoding/json"
	"testing"
)

// indentCorpus is JSON with what the indenter must step over: empty and
// nested containers, strings holding brackets, commas, colons, quotes and
// backslashes, escapes json.Marshal writes, and every scalar.
var indentCorpus = []string{
	`{}`, `[]`, `""`, `0`, `null`, `true`, `[{}]`, `{"a":[]}`, `[[],[{}],{"b":{}}]`,
	`{"a":"{[,:]}","b":"\"","c":"\\","d":"\\\"]","e":-1.5e+3,"f":[1,2,[3,{"g":null}]]}`,
	`{"html":"\u003c\u0026\u003e","nl":"a\nb","u":"\u2028"}`,
	`[{"name":"api","expires_at":"2026-11-30T22:49:25Z","declared":true,"drift":""},{"name":"web"}]`,
}

// appendIndented writes what json.Indent writes, byte for byte.
func TestIndentedIsJSONIndent(t *testing.T) {
	for _, src := range indentCorpus {
		checkIndented(t, []byte(src))
	}
}

func FuzzIndentedIsJSONIndent(f *testing.F) {
	for _, src := range indentCorpus {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		compact, err := json.Marshal(v) // what writeJSON indents
		if err != nil {
			t.Fatal(err)
		}
		checkIndented(t, compact)
	})
}

func checkIndented(t *testing.T, src []byte) {
	t.Helper()
	var want bytes.Buffer
	if err := json.Indent(&want, src, "", "  "); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if got := appendIndented(nil, src); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("%s indented:\n%s\nwant:\n%s", src, got, want.Bytes())
	}
}

// writeJSON writes what json.Encoder with a two-space indent writes.
func TestWriteJSONIsTheIndentingEncoder(t *testing.T) {
	v := map[string]any{"sandboxes": []map[string]any{{"name": "a<b", "n": 1}, {}}, "error": nil, "e": []int{}}
	var got, want bytes.Buffer
	if err := writeJSON(&got, v); err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("writeJSON wrote\n%s\nwant\n%s", got.String(), want.String())
	}
}
