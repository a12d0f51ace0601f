package statefile

// An upgrade turns a version-v document into a version-(v+1) one. Each
// step decodes version v's own types, frozen in a file of their own
// (v1.go when version 2 comes), converts them and encodes version v+1's,
// so no step edits an untyped map; Read checks that the result says
// version v+1.
type upgrade func(old []byte) ([]byte, error)

// upgrades[v] is the step from version v. Version 1 is the first and
// still the current one, so there is none yet.
var upgrades = map[int]upgrade{}
