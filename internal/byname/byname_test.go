package byname

import (
	"reflect"
	"testing"
)

type inner struct{ A, B string }

type source struct {
	Base
	Size  int
	Tags  []string
	Opts  map[string]string
	Inner inner
	Ptr   *inner
	Only  string
}

type Base struct{ Kind string }

type innerCopy struct{ A string }

type target struct {
	Kind  string
	Size  int64
	Tags  []string
	Opts  map[string]string
	Inner innerCopy
	Ptr   *innerCopy
	Other string
}

func TestCopyCarriesEachFieldOfTheSameName(t *testing.T) {
	src := source{Base: Base{"k"}, Size: 3, Tags: []string{"a"}, Opts: map[string]string{"x": "y"},
		Inner: inner{"a", "b"}, Ptr: &inner{"p", "q"}, Only: "dropped"}
	dst := target{Other: "kept"}
	Copy(&dst, src)
	want := target{Kind: "k", Size: 3, Tags: []string{"a"}, Opts: map[string]string{"x": "y"},
		Inner: innerCopy{"a"}, Ptr: &innerCopy{"p"}, Other: "kept"}
	if !reflect.DeepEqual(dst, want) {
		t.Fatalf("got %+v, want %+v", dst, want)
	}
	src.Tags[0], src.Opts["x"], src.Ptr.A = "changed", "changed", "changed"
	if dst.Tags[0] != "a" || dst.Opts["x"] != "y" || dst.Ptr.A != "p" {
		t.Errorf("the copy shares its source's slices, maps or pointers: %+v", dst)
	}
}

func TestCopyLeavesNilsAndKeepsEmptiness(t *testing.T) {
	dst := target{Tags: []string{"default"}}
	Copy(&dst, source{})
	if dst.Ptr != nil || dst.Opts != nil || !reflect.DeepEqual(dst.Tags, []string{"default"}) {
		t.Errorf("nil fields of the source changed the target: %+v", dst)
	}
	Copy(&dst, source{Tags: []string{}})
	if dst.Tags == nil || len(dst.Tags) != 0 {
		t.Errorf("an empty list became %#v", dst.Tags)
	}
}
