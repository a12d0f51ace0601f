package spec

import (
	"fmt"
	"strings"
	"testing"
)

// arrayDoc is a document whose one array of short strings fills size bytes.
func arrayDoc(size int) []byte {
	var b strings.Builder
	b.WriteString("[sync]\nexclude_patterns = [\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "  \"dir%07d/**\",\n", i)
	}
	b.WriteString("]\n")
	return []byte(b.String())
}

// BenchmarkParseArray parses and validates one large array with the limits
// lifted, so the parser's own growth shows: time per MB stays flat from
// 1 MB to 16 MB.
func BenchmarkParseArray(b *testing.B) {
	for _, mb := range []int{1, 4, 16} {
		doc := arrayDoc(mb << 20)
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				l, err := parseLayerWithin("bench.toml", doc, Limits{})
				if err != nil {
					b.Fatal(err)
				}
				if errs := validateLayer(l, false, linked); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}

// BenchmarkParseDeepKey is the 64 KB table header of 32,000 dotted parts:
// refused at the key-depth limit without building anything.
func BenchmarkParseDeepKey(b *testing.B) {
	doc := []byte("[" + strings.Repeat("a.", 31999) + "a]\nx = 1\n")
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := parseLayer("bench.toml", doc); err == nil {
			b.Fatal("a 32,000-part key was accepted")
		}
	}
}

// BenchmarkParseLeases parses what 1,000 leases make of the managed
// overrides file, which every command of a large workspace reads: its
// places are recorded only when a check reports one (layer.placed).
func BenchmarkParseLeases(b *testing.B) {
	var doc strings.Builder
	doc.WriteString("[leases]\n")
	for i := range 1000 {
		fmt.Fprintf(&doc, "[leases.sb%04d]\nacquired_at = %s\nexpires_at = %s\n\n", i,
			"2026-11-30T15:38:39Z", "2026-11-30T16:08:39Z")
	}
	data := []byte(doc.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parseLayer("overrides.toml", data); err != nil {
			b.Fatal(err)
		}
	}
}
