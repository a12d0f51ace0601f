package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The committed CRDs are what the generator makes from the pinned KubeVirt release.
func TestCommittedCRDsAreGenerated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "kubevirt.yaml")
	if err := run("v1.8.0", out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	want, err := os.ReadFile("../../testdata/crds/kubevirt.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("testdata/crds/kubevirt.yaml is stale: go run ./internal/crdgen")
	}
}
