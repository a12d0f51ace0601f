package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Read decodes a state file of any version this build knows, upgrading an
// older one step by step to the current version. It refuses a file a newer
// sbf wrote, rather than drop what it cannot understand.
func Read(r io.Reader) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading the state file: %w", err)
	}
	return Parse(data)
}

// Parse is Read of a state file already in memory (no copy of it).
func Parse(data []byte) (*File, error) { return readAt(data, Version, upgrades) }

// Write encodes f as the current version: indented JSON ending in a
// newline. It refuses what Read would refuse, so sbf never writes a file
// it cannot read back.
func Write(w io.Writer, f *File) error {
	if err := check(f); err != nil {
		return fmt.Errorf("encoding state: %w", err)
	}
	current := *f
	current.Version = Version
	data, err := json.MarshalIndent(&current, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding state: %w", err)
	}
	if _, err := w.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	return nil
}

// readAt reads a document into version current's File, running steps from
// the document's version up to current.
func readAt(data []byte, current int, steps map[int]upgrade) (*File, error) {
	// A file of the current version (nearly every read) is decoded once:
	// its version comes from the decoded file, not from a scan of its own.
	if f, err := decode(data); err == nil && f.Version == current {
		return f, nil
	}
	from, err := versionOf(data)
	if err != nil {
		return nil, err
	}
	if from > current {
		return nil, fmt.Errorf("written by a newer sbf (state version %d; this build reads up to %d)", from, current)
	}
	for v := from; v < current; v++ {
		step, ok := steps[v]
		if !ok {
			return nil, fmt.Errorf("no upgrade from state version %d", v)
		}
		if data, err = step(data); err != nil {
			return nil, fmt.Errorf("upgrading state version %d: %w", v, err)
		}
		if got, err := versionOf(data); err != nil || got != v+1 {
			return nil, fmt.Errorf("upgrading state version %d: the result is version %d (%v), not %d", v, got, err, v+1)
		}
	}
	return decode(data)
}

func versionOf(data []byte) (int, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return 0, err
	}
	if head.Version == nil {
		return 0, errors.New("no version field")
	}
	return *head.Version, nil
}

// decode reads a document of the current version. Unknown fields are
// skipped: a newer sbf may add optional ones without a new version.
func decode(data []byte) (*File, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.Sandboxes == nil {
		f.Sandboxes = map[string]*Sandbox{}
	}
	if err := check(&f); err != nil {
		return nil, err
	}
	return &f, nil
}

// check is what every state file has: a lineage, and a record for each
// sandbox it names.
func check(f *File) error {
	if f.Lineage == "" {
		return errors.New("no lineage")
	}
	for name, sb := range f.Sandboxes {
		if sb == nil {
			return fmt.Errorf("sandbox %q has no record", name)
		}
	}
	return nil
}
