package sandbox

import "testing"

func TestFnmatchLikeV1(t *testing.T) {
	match := excluder([]string{"*.pyc", ".venv", "build/**", "[!a]x"})
	for p, want := range map[string]bool{"a/b/c.pyc": true, ".venv": true, "x/.venv": true, "build/a/b": true,
		"src/main.go": false, "bx": true, "ax": false} {
		if match(p) != want {
			t.Errorf("%s: %v", p, !want)
		}
	}
}
