package external

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

// A refusal the plugin coded itself keeps its code and details across the pipe, so sbf
// says INSTANCE_LIMIT_EXCEEDED for a cluster's ceiling as it does for the host's.
func TestACodedErrorKeepsItsCodeAcrossThePipe(t *testing.T) {
	refusal := coded.New(coded.InstanceLimit, map[string]any{"max_instances": 2}, "owner limit reached")
	data, err := json.Marshal(EncodeError(fmt.Errorf("creating x: %w", refusal)))
	if err != nil {
		t.Fatal(err)
	}
	var wire Error
	if err := json.Unmarshal(data, &wire); err != nil {
		t.Fatal(err)
	}
	got := coded.Of(fmt.Errorf("sandbox api: %w", wire.Decode("x")), coded.Unknown)
	if got.Code != coded.InstanceLimit || got.Details["max_instances"] != float64(2) ||
		got.Message != "sandbox api: creating x: owner limit reached" {
		t.Errorf("after the pipe: %#v", got)
	}
}
