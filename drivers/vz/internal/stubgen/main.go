// Command stubgen type-checks sbf's vz driver for macOS on any host
// (`make check-darwin`). github.com/Code-Hex/vz/v3 is cgo and darwin only,
// so it cannot be compiled here; stubgen generates a stub module from that
// module's own source (every declaration and signature kept, bodies
// replaced by panics, cgo removed) and runs go vet's checks from source
// (internal/tools/crossvet) for darwin/arm64 and darwin/amd64 with the
// module replaced by the stub. A misspelt call or a wrong argument type in
// the driver therefore fails as it would on a Mac.
//
//	stubgen [-go GO] [-overlay FILE] [-arch arm64,amd64] [PACKAGE...]   check (default ./drivers/vz/...)
//	stubgen -out DIR                                                   only write the stub module
//
// It runs from the main module's folder, whose go.mod requires the module.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

const module = "github.com/Code-Hex/vz/v3"

func main() {
	out := flag.String("out", "", "write the stub module to this folder and stop")
	overlay := flag.String("overlay", "", "a go build -overlay file (replaces source files for the check)")
	arches := flag.String("arch", "arm64,amd64", "the darwin GOARCH values to check")
	goCmd := flag.String("go", "go", "the go command that runs the check")
	flag.Parse()
	if err := run(*out, *overlay, *goCmd, strings.Split(*arches, ","), flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "stubgen:", err)
		os.Exit(1)
	}
}

func run(out, overlay, goCmd string, arches, pkgs []string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	o := checkOptions{Root: root, Module: module, Packages: pkgs, Arches: arches, Overlay: overlay, Go: goCmd}
	if len(o.Packages) == 0 {
		o.Packages = []string{"./drivers/vz/..."}
	}
	if out != "" {
		dir, err := locate(o)
		if err != nil {
			return err
		}
		return generate(dir.Dir, out, dir.Version)
	}
	if err := check(o); err != nil {
		return err
	}
	fmt.Printf(
		"check-darwin: %s type-check for darwin/%s against %s\n",
		strings.Join(o.Packages, " "),
		strings.Join(arches, ", darwin/"),
		module,
	)
	return nil
}
