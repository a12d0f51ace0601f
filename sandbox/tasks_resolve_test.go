package sandbox

import (
	"context"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/state"
)

type taskMap map[string]*state.Task

func (m taskMap) ReadTasks() (map[string]*state.Task, error) { return m, nil }

func (taskMap) SaveTask(context.Context, *state.Task) error { return nil }

// A task is named as docker names containers: its whole id, or the start
// of it with or without "task_", as long as only one task starts so.
func TestTaskIDsResolveFromAUniqueStart(t *testing.T) {
	ts := &Tasks{Store: taskMap{"task_5307aa000001": {}, "task_5307bb000002": {}, "task_9a0000000003": {}}}
	for in, want := range map[string]string{
		"task_5307aa000001": "task_5307aa000001", "task_5307a": "task_5307aa000001", "5307b": "task_5307bb000002",
		"9": "task_9a0000000003", "task_9": "task_9a0000000003",
	} {
		if got, err := ts.Resolve(in); got != want || err != nil {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, code := range map[string]string{"5307": coded.InvalidArguments, "task_": coded.InvalidArguments,
		"77": CodeTaskNotFound, "task_77": CodeTaskNotFound} {
		if _, err := ts.Resolve(in); coded.Of(err, "").Code != code {
			t.Errorf("Resolve(%q): %v; want %s", in, err, code)
		}
	}
}
