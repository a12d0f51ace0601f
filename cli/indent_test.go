package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// indentTo writes what json.Indent writes, byte for byte, in pieces when
// there is more than one piece's worth.
func TestIndentedIsJSONIndent(t *testing.T) {
	for _, src := range indentCorpus {
		checkIndented(t, []byte(src))
	}
	rows := make([]map[string]any, 3000)
	for i := range rows {
		rows[i] = map[string]any{"name": fmt.Sprintf("sb%04d", i), "live": "running", "tags": []string{"a", "{"}}
	}
	big, err := json.Marshal(map[string]any{"sandboxes": rows})
	if err != nil {
		t.Fatal(err)
	}
	if len(big) < 2*indentPiece {
		t.Fatalf("%d bytes: too few for pieces", len(big))
	}
	checkIndented(t, big)
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
	var got bytes.Buffer
	rest, err := indentTo(&got, nil, src)
	if err != nil {
		t.Fatal(err)
	}
	if got.Write(rest); !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("%.200s indented:\n%.2000s\nwant:\n%.2000s", src, got.Bytes(), want.Bytes())
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
