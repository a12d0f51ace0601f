// Package images builds and finds sbf's own guest images: Linux root disks
// with a kernel and initrd for direct boot, made on this machine from a
// recipe embedded in the binary, so a VM can boot where no cloud image can
// be downloaded. A workspace selects one with [vm.image] location =
// "sbf:NAME". Images are cached by recipe hash: a changed recipe is a new
// image, an unchanged one is built once.
package images

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed all:recipes
var embedded embed.FS

// Scheme starts a location that names an sbf image.
const Scheme = "sbf:"

// Files of a built image.
const (
	KernelFile = "vmlinuz"
	InitrdFile = "initrd.img"
	DiskFile   = "disk.ext4"
	metaFile   = "image.json"
)

// Recipe is how an image is made: a folder with build.sh and recipe.json.
type Recipe struct {
	Name          string   `json:"name"`
	Description   string   `json:"description"`
	KernelCmdline string   `json:"kernel_cmdline"`
	Arches        []string `json:"arches"`
	NeedsRoot     bool     `json:"needs_root"`
	BuildTime     string   `json:"build_time,omitempty"`
	files         fs.FS
}

// Image is a built image on disk.
type Image struct {
	Name          string `json:"name"`
	Key           string `json:"key"` // recipe hash
	Arch          string `json:"arch"`
	Dir           string `json:"dir"`
	Kernel        string `json:"kernel"`
	Initrd        string `json:"initrd"`
	Disk          string `json:"disk"`
	KernelCmdline string `json:"kernel_cmdline"`
}

// NameOf returns the image name of an "sbf:NAME" location.
func NameOf(location string) (string, bool) {
	name, ok := strings.CutPrefix(location, Scheme)
	return name, ok && name != ""
}

// Recipes reads the recipes in fsys (a folder per recipe), or the ones
// built into sbf when fsys is nil.
func Recipes(fsys fs.FS) (map[string]Recipe, error) {
	if fsys == nil {
		sub, err := fs.Sub(embedded, "recipes")
		if err != nil {
			return nil, err
		}
		fsys = sub
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("listing image recipes: %w", err)
	}
	out := map[string]Recipe{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		files, _ := fs.Sub(fsys, e.Name())
		b, err := fs.ReadFile(files, "recipe.json")
		if err != nil {
			return nil, fmt.Errorf("reading recipe %s: %w", e.Name(), err)
		}
		r := Recipe{Name: e.Name(), files: files}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("parsing recipe %s/recipe.json: %w", e.Name(), err)
		}
		r.Name, r.files = e.Name(), files
		out[r.Name] = r
	}
	return out, nil
}

// Names lists the known image locations ("sbf:debian-12", …), sorted.
func Names(recipes map[string]Recipe) []string {
	var out []string
	for n := range recipes {
		out = append(out, Scheme+n)
	}
	slices.Sort(out)
	return out
}

// Key is the recipe hash an image of arch is cached under: every file of
// the recipe, its path and the arch.
func (r Recipe) Key(arch string) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(r.files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(r.files, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s %s\n", hex.EncodeToString(sum[:]), p)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hashing recipe %s: %w", r.Name, err)
	}
	fmt.Fprintf(h, "arch %s\n", arch)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Supports reports whether the recipe builds images of arch.
func (r Recipe) Supports(arch string) bool { return slices.Contains(r.Arches, arch) }

// Cache is where images live: Dirs are searched in order, new images are
// built into Dirs[0].
type Cache struct {
	Dirs []string
}

// DefaultCache is $SBF_IMAGE_CACHE when set; else the user's cache
// ($XDG_CACHE_HOME or ~/.cache, /sandboxforge/images) then the host's
// (/var/cache/sandboxforge/images), root building into the host's so
// that every user finds what root built.
func DefaultCache(getenv func(string) string, euid int) Cache {
	if d := getenv("SBF_IMAGE_CACHE"); d != "" {
		return Cache{Dirs: []string{d}}
	}
	system := SystemCacheDir
	if euid == 0 {
		return Cache{Dirs: []string{system}}
	}
	var user string
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		user = filepath.Join(d, "sandboxforge", "images")
	} else if h := getenv("HOME"); h != "" {
		user = filepath.Join(h, ".cache", "sandboxforge", "images")
	}
	if user == "" {
		return Cache{Dirs: []string{system}}
	}
	return Cache{Dirs: []string{user, system}}
}

// SystemCacheDir holds images root built, readable by every user.
const SystemCacheDir = "/var/cache/sandboxforge/images"

// ErrNotBuilt is returned by Lookup for an image that is not in the cache.
var ErrNotBuilt = errors.New("image not built")

// Lookup finds the built image of a recipe for arch.
func (c Cache) Lookup(r Recipe, arch string) (Image, error) {
	key, err := r.Key(arch)
	if err != nil {
		return Image{}, err
	}
	for _, dir := range c.Dirs {
		if im, err := readImage(filepath.Join(dir, folderName(r.Name, key))); err == nil && im.Key == key {
			return im, nil
		}
	}
	return Image{}, fmt.Errorf(
		"%s%s (%s, recipe %s) in %s: %w",
		Scheme,
		r.Name,
		arch,
		key,
		strings.Join(c.Dirs, ", "),
		ErrNotBuilt,
	)
}

func folderName(name, key string) string { return name + "-" + key }

// readImage reads a complete image folder: its metadata and every file.
func readImage(dir string) (Image, error) {
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return Image{}, err
	}
	var im Image
	if err := json.Unmarshal(b, &im); err != nil {
		return Image{}, fmt.Errorf("parsing %s: %w", filepath.Join(dir, metaFile), err)
	}
	im.Dir = dir
	im.Kernel, im.Initrd, im.Disk = filepath.Join(
		dir,
		KernelFile,
	), filepath.Join(
		dir,
		InitrdFile,
	), filepath.Join(
		dir,
		DiskFile,
	)
	for _, f := range []string{im.Kernel, im.Initrd, im.Disk} {
		if info, err := os.Stat(f); err != nil || info.Size() == 0 {
			return Image{}, fmt.Errorf("image %s is incomplete: %s missing or empty", dir, f)
		}
	}
	return im, nil
}
