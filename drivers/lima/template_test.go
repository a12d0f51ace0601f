package lima

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// The pinned Lima: its real template files, not a stand-in, are what the
// resolver is tested against.
const pinnedLima = "github.com/lima-vm/lima@v1.2.1"

var limaModule struct {
	once sync.Once
	dir  string
	err  error
}

// limaModuleDir downloads (or finds in the module cache) the pinned Lima
// module and returns its folder.
func limaModuleDir(t *testing.T) string {
	t.Helper()
	limaModule.once.Do(func() {
		cmd := exec.Command("go", "mod", "download", "-json", pinnedLima)
		cmd.Dir = os.TempDir() // outside this module: go.mod is neither read nor changed
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.Output()
		if err != nil {
			limaModule.err = err
			return
		}
		var m struct{ Dir, Error string }
		if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
			limaModule.err = &os.PathError{Op: "go mod download", Path: pinnedLima, Err: fs.ErrNotExist}
			return
		}
		limaModule.dir = m.Dir
	})
	if limaModule.err != nil {
		t.Fatalf("getting %s from the module proxy: %v", pinnedLima, limaModule.err)
	}
	return limaModule.dir
}

// moduleTemplates copies the module's templates into a temporary folder,
// restoring the links listed in scripts/lima-template-links.txt when
// withLinks is set (as scripts/build-lima.sh does).
func moduleTemplates(t *testing.T, withLinks bool) string {
	src := filepath.Join(limaModuleDir(t), "templates")
	dst := filepath.Join(t.TempDir(), "templates")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if withLinks {
		for link, target := range templateLinks(t) {
			if err := os.Symlink(target, filepath.Join(dst, filepath.FromSlash(link))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dst
}

func templateLinks(t *testing.T) map[string]string {
	f, err := os.Open("../../scripts/lima-template-links.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	links := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		link, target, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("links file: bad line %q", line)
		}
		links[link] = target
	}
	return links
}

// The links file names exactly files the module zip lacks, each pointing
// at a file it has.
func TestTemplateLinksMatchTheModule(t *testing.T) {
	src := filepath.Join(limaModuleDir(t), "templates")
	links := templateLinks(t)
	if len(links) == 0 {
		t.Fatal("no links listed")
	}
	for link, target := range links {
		if _, err := os.Stat(filepath.Join(src, filepath.FromSlash(link))); err == nil {
			t.Errorf("%s is in the module already; it is not a dropped link", link)
		}
		if _, err := os.Stat(filepath.Join(src, filepath.Dir(filepath.FromSlash(link)), target)); err != nil {
			t.Errorf("%s -> %s: target missing in the module", link, target)
		}
	}
}

func TestDefaultTemplatesResolveToImages(t *testing.T) {
	store := templateStore{dirs: []string{moduleTemplates(t, true)}}
	for _, tc := range []struct{ locator, wantX86 string }{
		// v1's default spelling and Lima's own.
		{"template:docker", "ubuntu-24.04-server-cloudimg-amd64.img"},
		{"template://docker", "ubuntu-24.04-server-cloudimg-amd64.img"},
		{"template://default", "ubuntu-25.04-server-cloudimg-amd64.img"},
	} {
		images, err := store.images(tc.locator)
		if err != nil {
			t.Errorf("%s: %v", tc.locator, err)
			continue
		}
		first := map[string]string{}
		for _, im := range images {
			if _, ok := first[im.Arch]; !ok {
				first[im.Arch] = im.Location
			}
		}
		if !strings.HasSuffix(first["x86_64"], tc.wantX86) || first["aarch64"] == "" {
			t.Errorf("%s: first images per arch = %v", tc.locator, first)
		}
		if images[0].Digest == "" {
			t.Errorf("%s: the pinned image lost its digest: %+v", tc.locator, images[0])
		}
	}
}

// Without the links (a plain module copy) the failure names what is
// missing and how to fix it, instead of "lists no images".
func TestMissingTemplateLinkIsExplained(t *testing.T) {
	store := templateStore{dirs: []string{moduleTemplates(t, false)}}
	_, err := store.images("template:docker")
	if err == nil || !strings.Contains(err.Error(), "_images/ubuntu-lts") || !strings.Contains(err.Error(), "make lima") {
		t.Fatalf("err = %v", err)
	}
}

func TestTemplateBaseForms(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "images: [{location: /a.img}]\nbase: [{url: \"template://b\"}, ./sub/c.yaml]\n")
	write("b.yaml", "base: template://d\nimages: [{location: /b.img}]\n")
	write("d.yaml", "images: [{location: /d.img}]\n")
	write("sub/c.yaml", "images: [{location: /c.img}]\n")
	write("loop.yaml", "base: template://loop\n")
	write("remote.yaml", "base: https://example.invalid/t.yaml\n")
	store := templateStore{dirs: []string{dir}}
	images, err := store.images("template://a")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, im := range images {
		got = append(got, im.Location)
	}
	if strings.Join(got, " ") != "/a.img /b.img /d.img /c.img" {
		t.Errorf("order = %v (want own images, then each base depth first)", got)
	}
	if _, err := store.images("template://loop"); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("loop: %v", err)
	}
	if _, err := store.images("template://remote"); err == nil || !strings.Contains(err.Error(), "remote") {
		t.Errorf("remote: %v", err)
	}
}

// sbf's resolver and the real limactl (`template copy --embed-all`) agree
// on the images of Lima's default templates, as installed. make e2e runs
// this with the limactl it built.
func TestTemplatesMatchRealLimactl(t *testing.T) {
	limactl := os.Getenv("SBF_TEST_LIMACTL")
	if limactl == "" {
		t.Skip("set SBF_TEST_LIMACTL to a built limactl (make e2e does)")
	}
	home := t.TempDir()
	store := newTemplateStore(limactl, func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	})
	for _, name := range []string{"docker", "default"} {
		cmd := exec.Command(limactl, "--tty=false", "template", "copy", "--embed-all", "template://"+name, "-")
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("limactl template copy --embed-all template://%s: %v", name, err)
		}
		var theirs templateDoc
		if err := yaml.Unmarshal(out, &theirs); err != nil {
			t.Fatal(err)
		}
		ours, err := store.images("template://" + name)
		if err != nil {
			t.Fatal(err)
		}
		if len(theirs.Images) == 0 || fmt.Sprint(ours) != fmt.Sprint(theirs.Images) {
			t.Errorf("template://%s:\nsbf:     %v\nlimactl: %v", name, ours, theirs.Images)
		}
	}
}
