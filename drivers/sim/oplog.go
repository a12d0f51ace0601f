package sim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Op is one line of the operation log.
type Op struct {
	Time     time.Time `json:"time"`
	Op       string    `json:"op"`
	Instance string    `json:"instance,omitempty"`
	Error    string    `json:"error,omitempty"`
	PID      int       `json:"pid"`
}

// Mutating reports whether the operation changes the world.
func (o Op) Mutating() bool {
	return o.Op != "list" && o.Op != "inspect" && o.Op != "list-snapshots" && o.Op != "template-open"
}

const logName = "ops.log"

// end appends the operation's outcome to the log and returns err. Lines
// are written with O_APPEND in one write each, so processes sharing the
// world interleave whole lines.
func (d *Driver) end(op, name string, err error) error {
	entry := Op{Time: d.clock.Now().UTC(), Op: op, Instance: name, PID: os.Getpid()}
	if err != nil {
		entry.Error = err.Error()
	}
	line, _ := json.Marshal(entry)
	f, ferr := os.OpenFile(filepath.Join(d.dir, logName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if ferr != nil {
		return errors.Join(err, fmt.Errorf("opening sim operation log: %w", ferr))
	}
	_, werr := f.Write(append(line, '\n'))
	f.Close()
	if werr != nil {
		return errors.Join(err, fmt.Errorf("writing sim operation log: %w", werr))
	}
	return err
}

// ReadLog returns every operation a world has seen, oldest first.
func ReadLog(dir string) ([]Op, error) {
	f, err := os.Open(filepath.Join(dir, logName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ops []Op
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var o Op
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, fmt.Errorf("sim log line %d: %w", len(ops)+1, err)
		}
		ops = append(ops, o)
	}
	return ops, sc.Err()
}
