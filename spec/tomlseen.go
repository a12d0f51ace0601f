package spec

// seenTracker holds TOML's rules on keys as go-toml v2.4.3's
// internal/tracker.SeenTracker does (which keys a document may define,
// extend or repeat), with each entry's children indexed by name instead of
// searched for in a list of every entry, which was quadratic in the size
// of a document.
type seenTracker struct {
	entries []seenEntry
	current int32 // the table key-values go to
}

type seenKind uint8

const (
	seenValue      seenKind = iota + 1 // a scalar, array or inline table: never extended
	seenDotted                         // a table a dotted key made: extended only by dotted keys
	seenTable                          // a table a [header] made (explicit) or passed through
	seenArrayTable                     // an array of tables, [[header]]
	seenAnonymous                      // a table or array inside an array: found by no name
)

type seenEntry struct {
	kind     seenKind
	explicit bool
	children map[string]int32
}

func (s *seenTracker) reset() {
	s.entries = append(s.entries[:0], seenEntry{kind: seenTable})
	s.current = 0
}

func (s *seenTracker) find(parent int32, name []byte) (int32, bool) {
	id, ok := s.entries[parent].children[string(name)]
	return id, ok
}

func (s *seenTracker) create(parent int32, name []byte, kind seenKind, explicit bool) int32 {
	id := int32(len(s.entries))
	s.entries = append(s.entries, seenEntry{kind: kind, explicit: explicit})
	if kind == seenAnonymous {
		return id
	}
	p := &s.entries[parent]
	if p.children == nil {
		p.children = map[string]int32{}
	}
	p.children[string(name)] = id
	return id
}

// intermediate passes through a part of a header's key other than its
// last, making an implicit table when there is none.
func (s *seenTracker) intermediate(parent int32, name []byte) (int32, bool) {
	id, ok := s.find(parent, name)
	if !ok {
		return s.create(parent, name, seenTable, false), true
	}
	switch s.entries[id].kind {
	case seenTable, seenArrayTable, seenDotted:
		return id, true // a dotted key's table can receive sub-tables, never a header of its own
	}
	return 0, false
}

// tableHeader is a [header]'s last part: a table defined once.
func (s *seenTracker) tableHeader(parent int32, name []byte) bool {
	id, ok := s.find(parent, name)
	if !ok {
		s.current = s.create(parent, name, seenTable, true)
		return true
	}
	e := &s.entries[id]
	if e.kind != seenTable || e.explicit {
		return false
	}
	e.explicit, s.current = true, id
	return true
}

// arrayTableHeader is a [[header]]'s last part: a new element, whose keys
// are new again.
func (s *seenTracker) arrayTableHeader(parent int32, name []byte) bool {
	id, ok := s.find(parent, name)
	if !ok {
		s.current = s.create(parent, name, seenArrayTable, true)
		return true
	}
	if s.entries[id].kind != seenArrayTable {
		return false
	}
	s.entries[id].children, s.current = nil, id // the previous element's keys are left behind
	return true
}

// dotted passes through a part of a key-value's key other than its last.
func (s *seenTracker) dotted(parent int32, name []byte) (int32, bool) {
	id, ok := s.find(parent, name)
	if !ok {
		return s.create(parent, name, seenDotted, false), true
	}
	return id, s.entries[id].kind == seenDotted
}

// leaf is a key-value's last part: defined once.
func (s *seenTracker) leaf(parent int32, name []byte) (int32, bool) {
	if _, ok := s.find(parent, name); ok {
		return 0, false
	}
	return s.create(parent, name, seenValue, false), true
}

// anonymous is an inline table or array inside an array.
func (s *seenTracker) anonymous(parent int32) int32 {
	return s.create(parent, nil, seenAnonymous, false)
}
