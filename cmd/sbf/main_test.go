package main

import (
	"database/sql"
	"slices"
	"testing"

	"github.com/sandboxforge/sbf/v1import/leases"
)

// sbf is the binary that reads v1's lease database (sbf-server hands
// import-v1 to it), so it must register the driver leases opens it with.
func TestSbfRegistersV1DatabaseDriver(t *testing.T) {
	if !slices.Contains(sql.Drivers(), leases.DriverName) {
		t.Fatalf("sbf registers no %q database/sql driver (only %v): import-v1 cannot read v1's leases",
			leases.DriverName, sql.Drivers())
	}
}
