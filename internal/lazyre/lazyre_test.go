package lazyre

import (
	"sync"
	"testing"
)

// A pattern compiles once, on first use, and answers as regexp does
// from every goroutine.
func TestCompilesOnFirstUse(t *testing.T) {
	r := &Regexp{expr: `^([a-z]+)-([0-9]{1,3})$`} // as New outside a test binary
	if r.rx != nil {
		t.Fatal("compiled before use")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if m := r.FindStringSubmatch("api-12"); len(m) != 3 || m[1] != "api" || m[2] != "12" {
				t.Errorf("FindStringSubmatch = %q", m)
			}
			if r.MatchString("api-1234") {
				t.Error("matched 4 digits")
			}
		})
	}
	wg.Wait()
	if got := r.ReplaceAllString("db-7", "$2"); got != "7" || r.String() != r.expr {
		t.Errorf("ReplaceAllString = %q, String = %q", got, r.String())
	}
}

// In a test binary a bad pattern fails at once, where its package's
// tests see it.
func TestABadPatternFailsInTests(t *testing.T) {
	if !inTest {
		t.Fatal("not recognised as a test binary")
	}
	defer func() {
		if recover() == nil {
			t.Error("New accepted an unbalanced pattern")
		}
	}()
	New(`(`)
}
