package lima

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// vmUser is the unprivileged user `make run` and the e2e suite make for
// VMs (scripts/vm-user.sh), and the one root guidance proposes.
const (
	vmUser     = "sbf"
	vmUserHome = "/var/lib/sbf"
)

// rootSteps says how to run sbf when it was started as root, which
// limactl refuses: as the user sudo came from, else as a user made for
// VMs (the one `make run` makes), never another person's account.
func rootSteps(sudoUser, passwd string) []string {
	if sudoUser != "" && sudoUser != "root" {
		return []string{"run sbf as " + sudoUser + ", the user sudo was started by: exit the root shell, " +
			"or: runuser -u " + sudoUser + " -- sbf apply"}
	}
	var steps []string
	if !hasUser(passwd, vmUser) {
		steps = append(steps, "create an unprivileged user for VMs (as 'make run' does): useradd --create-home "+
			"--home-dir "+vmUserHome+" --shell /bin/bash --user-group "+vmUser)
	}
	return append(steps,
		"give "+vmUser+" the workspace (or a copy of it): chown -R "+vmUser+": WORKSPACE",
		"then run sbf as that unprivileged user: runuser -u "+vmUser+" -- sbf apply -C WORKSPACE",
	)
}

// hasUser says whether passwd names the account.
func hasUser(passwd, name string) bool {
	f, err := os.Open(passwd)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if user, _, ok := strings.Cut(sc.Text(), ":"); ok && user == name {
			return true
		}
	}
	return false
}

// installSteps say how to get Lima: sbf's own build when sbf runs from
// its source tree (which has the Makefile), the usual ways otherwise.
func installSteps(sourceTree, what string) []string {
	if sourceTree != "" {
		return []string{what + ": in sbf's source tree, 'make -C " + sourceTree + " lima' builds v1.2.1 into " +
			filepath.Join(sourceTree, ".tools", "lima", "bin")}
	}
	return []string{what + " (macOS: brew install lima; Linux: the release archive from Lima's GitHub " +
		"releases, unpacked into /usr/local)"}
}

// sbfSourceTree is the sbf source tree the running binary was built in
// (bin/sbf of a checkout), or "" when it runs from anywhere else: only
// there do hints such as 'make lima' make sense.
func sbfSourceTree() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	dir := filepath.Dir(exe)
	for range 3 {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			line, _, _ := strings.Cut(string(data), "\n")
			if strings.TrimSpace(line) == "module github.com/sandboxforge/sbf" {
				return dir
			}
			return ""
		}
		dir = filepath.Dir(dir)
	}
	return ""
}
