package lima

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/sandboxforge/sbf/internal/hostpath"
	"gopkg.in/yaml.v3"
)

// templateStore finds Lima templates the way limactl does: the folders
// of $LIMA_TEMPLATES_PATH, else $LIMA_HOME/_templates and the
// share/lima/templates folder beside limactl.
type templateStore struct {
	dirs []string
}

func newTemplateStore(limactl string, getenv func(string) string) templateStore {
	if p := getenv("LIMA_TEMPLATES_PATH"); p != "" {
		return templateStore{dirs: filepath.SplitList(p)}
	}
	var dirs []string
	if home := limaHome(getenv); home != "" {
		dirs = append(dirs, filepath.Join(home, "_templates"))
	}
	if abs, err := filepath.Abs(limactl); err == nil {
		limactl = abs
	}
	if real, err := hostpath.Real(limactl); err == nil {
		dirs = append(dirs, filepath.Join(filepath.Dir(filepath.Dir(real)), "share", "lima", "templates"))
	}
	return templateStore{dirs: dirs}
}

// limaHome is $LIMA_HOME, else ~/.lima.
func limaHome(getenv func(string) string) string {
	if h := getenv("LIMA_HOME"); h != "" {
		return h
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".lima")
	}
	return ""
}

// templateDoc is the part of a template sbf reads: its images and what
// it is based on. Nothing else (mounts above all) is taken.
type templateDoc struct {
	Images []image  `yaml:"images"`
	Base   baseList `yaml:"base"`
}

// baseList accepts Lima's three spellings of base: a string, a list of
// strings, and a list of {url, digest} maps.
type baseList []string

func (b *baseList) UnmarshalYAML(n *yaml.Node) error {
	var one string
	if n.Kind == yaml.ScalarNode {
		if err := n.Decode(&one); err != nil {
			return err
		}
		*b = baseList{one}
		return nil
	}
	var items []yaml.Node
	if err := n.Decode(&items); err != nil {
		return err
	}
	for _, it := range items {
		var u struct {
			URL string `yaml:"url"`
		}
		if it.Kind == yaml.MappingNode {
			if err := it.Decode(&u); err != nil {
				return err
			}
		} else if err := it.Decode(&u.URL); err != nil {
			return err
		}
		*b = append(*b, u.URL)
	}
	return nil
}

// images resolves a template's images the way `limactl template copy
// --embed-all` merges them: the template's own list, then each base's
// (recursively, in order). Only local templates are followed: an image
// list must not depend on a download.
func (s templateStore) images(locator string) ([]image, error) {
	var out []image
	if err := s.collect(locator, "", map[string]bool{}, &out); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("template %s lists no images (base chain followed); set [vm.image] location", locator)
	}
	return out, nil
}

func (s templateStore) collect(locator, relativeTo string, seen map[string]bool, out *[]image) error {
	file, err := s.locate(locator, relativeTo)
	if err != nil {
		return err
	}
	if seen[file] {
		return fmt.Errorf("template %s: base loop through %s", locator, file)
	}
	seen[file] = true
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading template %s: %w", locator, err)
	}
	var doc templateDoc
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("parsing template %s (%s): %w", locator, file, err)
	}
	*out = append(*out, doc.Images...)
	for _, base := range doc.Base {
		if err := s.collect(base, filepath.Dir(file), seen, out); err != nil {
			return fmt.Errorf("%s: %w", locator, err)
		}
	}
	return nil
}

// locate turns a locator (template://NAME, template:NAME as v1 spelled
// it, a path) into a file.
func (s templateStore) locate(locator, relativeTo string) (string, error) {
	name, isTemplate := strings.CutPrefix(locator, "template://")
	if !isTemplate {
		if n, ok := strings.CutPrefix(locator, "template:"); ok {
			name, isTemplate = n, true
		}
	}
	if !isTemplate {
		if strings.Contains(locator, "://") {
			return "", fmt.Errorf(
				"template %s is remote; sbf reads only local templates (set [vm.image] location instead)",
				locator,
			)
		}
		if !filepath.IsAbs(locator) && relativeTo != "" {
			locator = filepath.Join(relativeTo, locator)
		}
		return locator, nil
	}
	if strings.Contains(name, "..") {
		return "", fmt.Errorf("template name %q must not contain \"..\"", name)
	}
	// Lima's rule: add .yaml unless the name has an extension that does
	// not start with a digit (ubuntu-24.04 is a name, docker.sh a file).
	if ext := path.Ext(name); len(ext) < 2 || unicode.IsDigit(rune(ext[1])) {
		name += ".yaml"
	}
	for _, dir := range s.dirs {
		f := filepath.Join(dir, filepath.FromSlash(name))
		if _, err := os.Stat(f); err == nil {
			return f, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("looking for template %s: %w", locator, err)
		}
	}
	return "", fmt.Errorf("template %s not found in %s (a Lima built from the Go module proxy lacks the "+
		"template links its source tree has; sbf's 'make lima' restores them)", locator, strings.Join(s.dirs, ", "))
}
