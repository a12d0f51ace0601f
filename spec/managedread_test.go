package spec

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/readcount"
)

// A request reads the overrides file once: its edit starts from that read
// and the re-read after its locks happens only when another run changed
// the file meanwhile, whose edit it then keeps.
func TestTheOverridesFileIsReadAgainOnlyWhenItChanged(t *testing.T) {
	r, errs := load(t, map[string]string{FileName: "[sandboxes.api]\n[sandboxes.web]\n"}, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	reads := func(do func()) int64 {
		before := readcount.Now()
		do()
		return readcount.Now().Since(before).Of(readcount.Overrides)
	}
	lease := func(name string, end time.Time) func(*Managed) error {
		return func(m *Managed) error {
			m.SetLease(name, LeaseRecord{AcquiredAt: end.Add(-time.Hour), ExpiresAt: end})
			return nil
		}
	}
	end := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if n := reads(func() {
		if fresh, err := r.Fresh(); err != nil || fresh != r {
			t.Errorf("Fresh of an unchanged file: %v, a new resolve %v", err, fresh != r)
		}
		if _, err := r.Managed(); err != nil {
			t.Error(err)
		}
	}); n != 0 {
		t.Errorf("an unchanged file was read %d times", n)
	}
	other, err := Load(Options{Backends: linked, Root: r.Root, Host: r.Host})
	if err != nil {
		t.Fatal(err)
	}
	if err := EditManaged(context.Background(), other, flock.Holder{}, lease("web", end)); err != nil {
		t.Fatal(err)
	}
	var fresh *Resolved
	if n := reads(func() { fresh, err = r.Fresh() }); n != 1 || err != nil {
		t.Errorf("a changed file was read %d times (%v)", n, err)
	}
	if _, ok := fresh.Config.Leases["web"]; !ok {
		t.Error("the re-read missed the other run's lease")
	}
	// An edit from the stale read keeps the other run's change.
	if err := EditManaged(context.Background(), r, flock.Holder{}, lease("api", end)); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(r.Root, Dir, OverridesFile))
	m, err := ReadManaged(r.Root)
	if _, web := m.Lease("web"); err != nil || !web {
		t.Errorf("the stale edit lost web's lease:\n%s", data)
	}
	if _, api := m.Lease("api"); !api {
		t.Errorf("the edit wrote no lease for api:\n%s", data)
	}
}
