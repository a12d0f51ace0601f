package coded

import (
	"errors"
	"fmt"
	"testing"
)

type locked struct{}

func (locked) Error() string { return "locked" }
func (locked) Coded() *Error { return New(StateLocked, map[string]any{"path": "p"}, "locked") }

func TestOfKeepsTheWholeMessageAndTheCode(t *testing.T) {
	inner := New(TTLInvalid, map[string]any{"ttl": "9d"}, "ttl 9d is too long")
	err := fmt.Errorf("extending api: %w", inner)
	got := Of(err, Unknown)
	if got.Code != TTLInvalid || got.Message != "extending api: ttl 9d is too long" || got.Details["ttl"] != "9d" {
		t.Errorf("Of = %+v", got)
	}
	if got := Of(fmt.Errorf("saving: %w", locked{}), Unknown); got.Code != StateLocked || got.Details["path"] != "p" {
		t.Errorf("Coder: %+v", got)
	}
	if got := Of(errors.New("boom"), BackendCommand); got.Code != BackendCommand || got.Details == nil {
		t.Errorf("fallback: %+v", got)
	}
	if Of(nil, Unknown) != nil {
		t.Error("nil error classified")
	}
	var e *Error
	if !errors.As(fmt.Errorf("x: %w", inner), &e) || e != inner {
		t.Error("not errors.As friendly")
	}
}
