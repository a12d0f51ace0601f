package loop

import (
	"container/heap"
	"time"

	"github.com/sandboxforge/sbf/spec"
)

// entry is one workspace's place in the loop's queue, or its pools'
// (pools).
type entry struct {
	key      string
	ws       spec.Options
	pools    bool
	due      time.Time
	index    int  // in the queue's heap; -1 while its pass runs
	dirty    bool // woken while its pass ran: run again at once
	failures int
	expiry   time.Time // the earliest lease end the last pass saw
	// parked holds the configuration files' fingerprint while the entry
	// waits for them to change; due is then when to look at them again.
	parked   string
	parkedAt time.Time // when it was parked
}

func (en *entry) running() bool { return en.index < 0 }

// poolKey is the queue key of a workspace's pool passes. Roots are
// absolute paths, so at equal due times a workspace's own pass (its
// expiries) comes before any refill.
func poolKey(root string) string { return "pools\x00" + root }

// queue holds the loop's entries by key; those not running wait in a
// heap ordered by due time, then key, so the earliest due is handed out
// first and equal due times always go in the same order.
type queue struct {
	byKey   map[string]*entry
	waiting dueHeap
}

func newQueue() *queue { return &queue{byKey: map[string]*entry{}} }

// add queues a new entry.
func (q *queue) add(en *entry) {
	q.byKey[en.key] = en
	heap.Push(&q.waiting, en)
}

// schedule moves an entry's due time, keeping the heap in order.
func (q *queue) schedule(en *entry, due time.Time) {
	en.due = due
	if !en.running() {
		heap.Fix(&q.waiting, en.index)
	}
}

// next is the waiting entry due first.
func (q *queue) next() (*entry, bool) {
	if len(q.waiting) == 0 {
		return nil, false
	}
	return q.waiting[0], true
}

// take removes the first entry from the heap: its pass is starting.
func (q *queue) take() *entry { return heap.Pop(&q.waiting).(*entry) }

// requeue puts an entry back in the heap at due.
func (q *queue) requeue(en *entry, due time.Time) {
	en.due = due
	heap.Push(&q.waiting, en)
}

// dueHeap implements heap.Interface; each entry knows its index.
type dueHeap []*entry

func (h dueHeap) Len() int { return len(h) }

func (h dueHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].key < h[j].key
}

func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *dueHeap) Push(x any) {
	en := x.(*entry)
	en.index = len(*h)
	*h = append(*h, en)
}

func (h *dueHeap) Pop() any {
	old := *h
	en := old[len(old)-1]
	old[len(old)-1] = nil
	en.index = -1
	*h = old[:len(old)-1]
	return en
}
