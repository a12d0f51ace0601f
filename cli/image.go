package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/images"
	"github.com/sandboxforge/sbf/internal/flock"
)

func (a *app) imageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build and list sbf's own guest images (sbf:debian-12)",
		Long: "sbf's own guest images boot where no cloud image can be downloaded: they are built on this machine\n" +
			"from a recipe inside sbf (debootstrap from the Debian mirror apt uses) and selected with\n" +
			"[vm.image] location = \"sbf:NAME\". Images are cached by recipe hash.",
	}
	cmd.AddCommand(a.imageBuildCommand(), a.imageListCommand())
	return cmd
}

// recipes are the built-in ones, or those of $SBF_IMAGE_RECIPES (a folder
// of recipe folders: for trying a changed recipe, and for tests).
func (a *app) recipes() (map[string]images.Recipe, error) {
	if d := a.getenv("SBF_IMAGE_RECIPES"); d != "" {
		return images.Recipes(os.DirFS(d))
	}
	return images.Recipes(nil)
}

func (a *app) imageCache(out string) images.Cache {
	if out != "" {
		return images.Cache{Dirs: []string{out}}
	}
	return images.DefaultCache(a.getenv, os.Geteuid())
}

func (a *app) imageBuildCommand() *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "build [NAME]",
		Short: "Build an image (default debian-12) unless it is cached; print its folder",
		Long: "Builds the image unless the cache holds it already, printing the recipe's progress on stderr\n" +
			"and only the image folder on stdout. Building debian-12 needs root; as root the image goes to\n" +
			images.SystemCacheDir + ", where every user finds it.",
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(_ *cobra.Command, list []string) error {
			name := "debian-12"
			if len(list) == 1 {
				name = list[0]
			}
			recipes, err := a.recipes()
			if err != nil {
				return err
			}
			r, ok := recipes[name]
			if !ok {
				return usageErrorf("no image recipe %q (known: %v)", name, images.Names(recipes))
			}
			c, err := a.clock()
			if err != nil {
				return err
			}
			b := images.Builder{Cache: a.imageCache(out), Euid: os.Geteuid(), Progress: a.stderr, Clock: c,
				Who: flock.Holder{Command: "sbf image build", PID: os.Getpid()}, LockTimeout: time.Hour}
			im, err := b.Build(a.context(), r, drivers.CanonicalArch(runtime.GOARCH))
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, im)
			}
			_, err = fmt.Fprintln(a.stdout, im.Dir)
			return err
		},
	}
	cmd.Flags().
		StringVar(&out, "out", "", "image cache `DIR` to build into (default $SBF_IMAGE_CACHE, else the user's or, as "+
			"root, the host's cache)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the image (folder, files, kernel command line) as JSON")
	return cmd
}

type imageRow struct {
	Location    string `json:"location"`
	Description string `json:"description"`
	Built       bool   `json:"built"`
	Dir         string `json:"dir,omitempty"`
	Problem     string `json:"problem,omitempty"`
}

func (a *app) imageListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the image recipes and whether each is built for this machine",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			recipes, err := a.recipes()
			if err != nil {
				return err
			}
			arch := drivers.CanonicalArch(runtime.GOARCH)
			cache := a.imageCache("")
			var rows []imageRow
			for _, loc := range images.Names(recipes) {
				name, _ := images.NameOf(loc)
				r := recipes[name]
				row := imageRow{Location: loc, Description: r.Description}
				im, err := cache.Lookup(r, arch)
				switch {
				case err == nil:
					row.Built, row.Dir = true, im.Dir
				case errors.Is(err, images.ErrNotBuilt):
				default:
					row.Problem = err.Error()
				}
				rows = append(rows, row)
			}
			if asJSON {
				return writeJSON(a.stdout, rows)
			}
			t := newTable(a.stdout, "LOCATION", "BUILT", "FOLDER", "DESCRIPTION")
			for _, r := range rows {
				built := "no (sbf image build)"
				if r.Built {
					built = "yes"
				}
				t.row(r.Location, built, r.Dir, r.Description)
			}
			t.flush()
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
