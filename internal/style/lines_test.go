package style

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const maxLine = 120

// structTag matches a field line whose length comes from its tag: breaking a
// tag is impossible, so these are the one exception.
var structTag = regexp.MustCompile("^\\s*[A-Za-z_][A-Za-z0-9_]*(\\s+[^\\s`]+)?\\s+`[^`]*`\\s*(//.*)?$")

func TestGoLinesAreAtMost120Characters(t *testing.T) {
	var long []string
	walkGo(t, func(path string) error {
		long = append(long, longLines(t, path)...)
		return nil
	})
	for _, l := range long {
		t.Error(l)
	}
}

// walkGo calls fn with every Go file of the repository (the nested
// kubevirt module included), leaving out hidden folders, testdata,
// release output and node_modules.
func walkGo(t *testing.T, fn func(path string) error) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" ||
			d.Name() == "dist" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		return fn(path)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func longLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if width(line) > maxLine && !structTag.MatchString(line) {
			out = append(out, path+":"+strconv.Itoa(n)+": "+strconv.Itoa(width(line))+" characters (max 120)")
		}
	}
	return out
}

// width counts characters, a tab as one: the rule is about characters.
func width(line string) int { return len([]rune(line)) }
