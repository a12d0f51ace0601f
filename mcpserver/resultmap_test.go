package mcpserver

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A typed result becomes the map encoding/json would make of it: embedded
// structs and pointers inline, omitempty and omitzero honoured, "-" left out.
func TestAResultMapIsWhatJSONWouldMake(t *testing.T) {
	type inner struct {
		A string `json:"a"`
		B int    `json:"b,omitempty"`
	}
	type extra struct {
		C []string `json:"c,omitempty"`
	}
	type result struct {
		inner
		*extra
		Out    string            `json:"stdout"`
		Hidden string            `json:"-"`
		Nested map[string]string `json:"nested"`
		Ptr    *int              `json:"ptr,omitempty"`
		Zero   inner             `json:"zero,omitzero"`
		Name   string
	}
	for _, r := range []result{
		{inner: inner{A: "x", B: 2}, extra: &extra{C: []string{"1"}}, Out: "\x01\x1b", Hidden: "h",
			Nested: map[string]string{"k": "v"}, Name: "n"},
		{},
	} {
		got, ok := resultMap(&r)
		raw, _ := json.Marshal(&r)
		var want map[string]any
		json.Unmarshal(raw, &want)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("resultMap = %v %v\nJSON makes %v", got, ok, want)
		}
	}
}
