package main

import (
	"encoding/json"
	"io"
	"sort"
)

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func sortStrings(s []string) []string {
	sort.Strings(s)
	return s
}
