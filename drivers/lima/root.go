package lima

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// rootSteps says how to run sbf when it was started as root, which
// limactl refuses: as the user sudo came from, else as an existing
// regular user, else as a new one, with the exact commands.
func rootSteps(sudoUser, passwd string) []string {
	if sudoUser != "" && sudoUser != "root" {
		return []string{"run sbf as " + sudoUser + ", the user sudo was started by: exit the root shell, " +
			"or: runuser -u " + sudoUser + " -- sbf apply"}
	}
	if u := regularUser(passwd); u != "" {
		return []string{"run sbf as an unprivileged user such as " + u + ": runuser -u " + u + " -- sbf apply " +
			"(the workspace must be writable by " + u + ")"}
	}
	return []string{
		"create an unprivileged user for VMs: useradd --create-home --shell /bin/bash sbf",
		"give it the workspace (or a copy): chown -R sbf: WORKSPACE",
		"then run sbf as that user: runuser -u sbf -- sbf apply -C WORKSPACE",
	}
}

// regularUser is the first account in passwd with a regular UID and a
// login shell.
func regularUser(passwd string) string {
	f, err := os.Open(passwd)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 7 {
			continue
		}
		uid, err := strconv.Atoi(fields[2])
		shell := fields[6]
		if err == nil && uid >= 1000 && uid < 60000 && !strings.HasSuffix(shell, "nologin") &&
			!strings.HasSuffix(shell, "false") {
			return fields[0]
		}
	}
	return ""
}
