package external

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/sandboxforge/sbf/drivers"
)

// conn is sbf's end of a plugin's pipes: calls go out on in, answers come back on a
// reader goroutine and are handed to the call waiting for their id.
type conn struct {
	// wmu serialises writes to the plugin. It is never held with mu: a write may block
	// until the plugin reads, and the plugin may be waiting for our reader, which takes mu.
	wmu     sync.Mutex
	in      io.WriteCloser
	enc     *json.Encoder
	mu      sync.Mutex // guards everything below
	nextID  uint64
	pending map[uint64]*pending
	dead    error // why the plugin stopped answering; set once
	// died says how the plugin ended, with what it wrote on stderr; asked once when
	// its stdout ends.
	died func() error
}

type pending struct {
	ctx  context.Context
	done chan Response
}

func newConn(out io.Reader, in io.WriteCloser, died func() error) *conn {
	c := &conn{in: in, enc: json.NewEncoder(in), pending: map[uint64]*pending{}, died: died}
	go c.read(out)
	return c
}

// read routes the plugin's answers until its stdout ends, then fails every waiting call.
func (c *conn) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var r Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // a stray line (a library printing to stdout) is not an answer
		}
		c.mu.Lock()
		p := c.pending[r.ID]
		if r.Done {
			delete(c.pending, r.ID)
		}
		c.mu.Unlock()
		switch {
		case p == nil:
		case r.Done:
			p.done <- r
		case r.Progress != "":
			drivers.Progressf(p.ctx, "%s", r.Progress)
		}
	}
	err := errors.New("the plugin closed its output")
	if c.died != nil {
		err = c.died()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = err
	for id, p := range c.pending {
		p.done <- Response{ID: id, Done: true, Error: EncodeError(err)}
		delete(c.pending, id)
	}
}

// call sends method and waits for its answer, decoding the result into result (when not
// nil). When ctx ends first the plugin is told to cancel the call.
func (c *conn) call(ctx context.Context, method string, params, result any) error {
	raw, err := encodeParams(method, params)
	if err != nil {
		return err
	}
	p := &pending{ctx: ctx, done: make(chan Response, 1)}
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, c.dead)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = p
	c.mu.Unlock()
	if err := c.send(Request{ID: id, Method: method, Params: raw}); err != nil {
		c.forget(id)
		return fmt.Errorf("%s: sending to the plugin: %w", method, err)
	}
	select {
	case r := <-p.done:
		if r.Error != nil {
			return r.Error.Decode(instanceOf(params))
		}
		if result != nil && len(r.Result) > 0 {
			if err := json.Unmarshal(r.Result, result); err != nil {
				return fmt.Errorf("%s: decoding the plugin's answer: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		cp, _ := encodeParams(MethodCancel, Cancel{ID: id})
		c.send(Request{Method: MethodCancel, Params: cp})
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *conn) send(r Request) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.enc.Encode(r)
}

func (c *conn) forget(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, id)
}

// close ends the session: the plugin sees its stdin end and exits.
func (c *conn) close() error { return c.in.Close() }

// instanceOf is the instance a call is about, for errors that name it.
func instanceOf(params any) string {
	switch p := params.(type) {
	case Name:
		return p.Name
	case Claim:
		return p.Name
	case Spare:
		return p.Name
	case drivers.Spec:
		return p.Name
	}
	return ""
}
