package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `sbf image build` prints the image folder and nothing else on stdout,
// whatever the recipe writes (mkfs.ext4 lists files on stdout), so
// `dir=$(sbf image build)` works.
func TestImageBuildStdoutIsOnlyTheFolder(t *testing.T) {
	recipes := t.TempDir()
	write(t, filepath.Join(recipes, "tiny", "recipe.json"),
		`{"kernel_cmdline": "root=/dev/vda", "arches": ["x86_64", "aarch64"]}`)
	write(t, filepath.Join(recipes, "tiny", "build.sh"), `set -e
echo "Creating regular file /etc/hostname"
echo "a progress line" >&2
mkdir -p "$1"; for f in vmlinuz initrd.img disk.ext4; do echo x > "$1/$f"; done
`)
	cache := t.TempDir()
	env := map[string]string{"SBF_IMAGE_RECIPES": recipes, "SBF_IMAGE_CACHE": cache}
	r := sbf(t, env, "image", "build", "tiny")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	dir := strings.TrimSuffix(r.stdout, "\n")
	if strings.Contains(dir, "\n") || filepath.Dir(dir) != cache {
		t.Fatalf("stdout = %q, want only the image folder under %s", r.stdout, cache)
	}
	if _, err := os.Stat(filepath.Join(dir, "disk.ext4")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stderr, "Creating regular file") || !strings.Contains(r.stderr, "a progress line") {
		t.Errorf("stderr lacks the recipe's output: %q", r.stderr)
	}
	// Cached: the second build prints the same folder at once.
	if again := sbf(t, env, "image", "build", "tiny"); again.stdout != r.stdout || again.stderr != "" {
		t.Errorf("second build: %+v", again)
	}
	list := sbf(t, env, "image", "list", "--json")
	var rows []imageRow
	if err := json.Unmarshal([]byte(list.stdout), &rows); err != nil || len(rows) != 1 || !rows[0].Built ||
		rows[0].Dir != dir {
		t.Errorf("image list: %s %v", list.stdout, err)
	}
	if r := sbf(t, env, "image", "build", "nope"); r.code != 2 || !strings.Contains(r.stderr, "sbf:tiny") {
		t.Errorf("unknown recipe: %+v", r)
	}
}
