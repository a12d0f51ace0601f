package integration

import (
	"context"
	"testing"

	"github.com/sandboxforge/sbf/internal/clock"
)

// What a short sbf command pays for the kubevirt backend: start the plugin, greet it, list
// the VMs over the API, end it. This decides one kept-open process per driver instance
// (per sbf process and workspace) over one per call.
func BenchmarkPluginLaunchListClose(b *testing.B) {
	s := newSpace(b, quick)
	for b.Loop() {
		d, err := launch(b, s.env(b, clock.Real{}, s.kubeconfig))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.List(context.Background()); err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}

// A List on a plugin kept open: what each later call of the same sbf process pays.
func BenchmarkPluginListKeptOpen(b *testing.B) {
	s := newSpace(b, quick)
	d, err := launch(b, s.env(b, clock.Real{}, s.kubeconfig))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	for b.Loop() {
		if _, err := d.List(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
