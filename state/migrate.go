package state

import (
	"encoding/json"
	"fmt"
)

// migrations[v] rewrites a version-v document into version v+1. Each
// step is small and permanent: old state files load through the chain.
var migrations = map[int]func(doc map[string]any) error{}

func decode(data []byte) (*File, error) { return decodeAt(data, Version, migrations) }

// decodeAt reads a document into the current shape, running the migration
// chain from the document's version up to current.
func decodeAt(data []byte, current int, migrations map[int]func(map[string]any) error) (*File, error) {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	v, ok := doc["version"].(float64)
	if !ok {
		return nil, fmt.Errorf("no version field")
	}
	from := int(v)
	if from > current {
		return nil, fmt.Errorf("written by a newer sbf (state version %d; this build reads up to %d)", from, current)
	}
	if from == current {
		return strictDecode(data)
	}
	for version := from; version < current; version++ {
		step, ok := migrations[version]
		if !ok {
			return nil, fmt.Errorf("no migration from state version %d", version)
		}
		if err := step(doc); err != nil {
			return nil, fmt.Errorf("migrating state version %d: %w", version, err)
		}
		doc["version"] = float64(version + 1)
	}
	migrated, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return strictDecode(migrated)
}

func strictDecode(data []byte) (*File, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.Lineage == "" {
		return nil, fmt.Errorf("no lineage")
	}
	if f.Sandboxes == nil {
		f.Sandboxes = map[string]*Sandbox{}
	}
	for name, sb := range f.Sandboxes {
		if sb == nil {
			return nil, fmt.Errorf("sandbox %q has no record", name)
		}
	}
	return &f, nil
}
