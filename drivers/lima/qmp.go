package lima

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// qmp is a connection to a QEMU's monitor (QMP), the socket Lima keeps in
// each instance folder (qmp.sock): what a fork pauses, saves and resumes a
// VM through. Commands are sent one at a time; events are skipped.
type qmp struct {
	conn net.Conn
	r    *bufio.Reader
}

// qmpWait bounds one command's answer: a save's migrate answers at once
// and is then polled.
const qmpWait = time.Minute

func dialQMP(ctx context.Context, path string) (*qmp, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connecting to QEMU's monitor %s: %w", path, err)
	}
	q := &qmp{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) }) // at once
	defer stop()
	conn.SetDeadline(clock.Real{}.Now().Add(qmpWait))
	if _, err := q.r.ReadBytes('\n'); err != nil { // the greeting
		conn.Close()
		return nil, fmt.Errorf("reading QEMU's monitor greeting: %w", err)
	}
	if err := q.do(ctx, "qmp_capabilities", nil, nil); err != nil {
		conn.Close()
		return nil, err
	}
	return q, nil
}

func (q *qmp) Close() error { return q.conn.Close() }

// do runs one command and decodes its answer into out (nil: ignored).
func (q *qmp) do(ctx context.Context, command string, args map[string]any, out any) error {
	stop := context.AfterFunc(ctx, func() { q.conn.SetDeadline(time.Unix(1, 0)) }) // at once
	defer stop()
	q.conn.SetDeadline(clock.Real{}.Now().Add(qmpWait))
	req := map[string]any{"execute": command}
	if args != nil {
		req["arguments"] = args
	}
	msg, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("QEMU %s: %w", command, err)
	}
	if _, err := q.conn.Write(append(msg, '\n')); err != nil {
		return fmt.Errorf("QEMU %s: %w", command, err)
	}
	for {
		line, err := q.r.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("QEMU %s: reading its answer: %w", command, err)
		}
		var a struct {
			Event  string          `json:"event"`
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &a); err != nil {
			return fmt.Errorf("QEMU %s: its answer: %w", command, err)
		}
		switch {
		case a.Event != "":
			continue
		case a.Error != nil:
			return fmt.Errorf("QEMU %s: %s", command, a.Error.Desc)
		case out != nil:
			return json.Unmarshal(a.Return, out)
		}
		return nil
	}
}

// status is the VM's run state: "running", "paused", "inmigrate"…
func (q *qmp) status(ctx context.Context) (string, error) {
	var s struct {
		Status string `json:"status"`
	}
	err := q.do(ctx, "query-status", nil, &s)
	return s.Status, err
}

// qmpBlock is one of query-block's devices: its name and top image.
type qmpBlock struct {
	Device   string `json:"device"`
	Inserted *struct {
		File        string `json:"file"`
		NodeName    string `json:"node-name"`
		BackingFile string `json:"backing_file"`
		ReadOnly    bool   `json:"ro"`
	} `json:"inserted"`
}

// disk finds Lima's VM disk, the one writable disk (the other, cidata, is
// a read-only CD): by what it is, since its file name is what QEMU opened,
// which a fork renames. With device set, the disk of that name.
func (q *qmp) disk(ctx context.Context, device string) (qmpBlock, error) {
	var blocks []qmpBlock
	if err := q.do(ctx, "query-block", nil, &blocks); err != nil {
		return qmpBlock{}, err
	}
	var found []qmpBlock
	for _, b := range blocks {
		if b.Inserted != nil && (b.Device == device || device == "" && !b.Inserted.ReadOnly) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		return qmpBlock{}, fmt.Errorf("QEMU has %d writable disks%s; want Lima's one", len(found), device)
	}
	return found[0], nil
}
