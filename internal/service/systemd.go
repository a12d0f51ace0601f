package service

import (
	"fmt"
	"path"
	"strings"
)

// systemd is a user unit, run by the user's systemd instance: started at
// login (and at boot with `loginctl enable-linger`), logging to the
// journal (journalctl --user -u sbf-serve).
type systemd struct{ dir string }

func (systemd) Kind() string   { return "systemd" }
func (m systemd) Path() string { return path.Join(m.dir, Name+".service") }
func (systemd) Logs(Definition) string {
	return "journalctl --user -u " + Name
}

func (systemd) Install() []Step {
	return []Step{
		{Args: []string{"systemctl", "--user", "daemon-reload"}},
		{Args: []string{"systemctl", "--user", "enable", Name + ".service"}},
		// restart, not start: a reinstalled unit must replace the running loop.
		{Args: []string{"systemctl", "--user", "restart", Name + ".service"}},
	}
}

func (systemd) Uninstall() []Step {
	return []Step{
		{Args: []string{"systemctl", "--user", "disable", "--now", Name + ".service"}, MayFail: true},
	}
}

func (systemd) Status() Step {
	// Exits 3 for a stopped unit: an answer, not a failure.
	return Step{Args: []string{"systemctl", "--user", "status", "--no-pager", "--lines", "20", Name + ".service"},
		MayFail: true}
}

const unitTemplate = `# sbf's reconcile loop as a systemd user unit: leases end (their VMs
# deleted) and drift is repaired with no other sbf running. Written by
# 'sbf service install'; 'sbf service uninstall' removes it.
[Unit]
Description=%s

[Service]
Type=exec
ExecStart=%s
WorkingDirectory=%s
%sRestart=on-failure
RestartSec=5
# The VMs a pass boots (Lima's host agents, vz-run supervisors) belong to
# the user, not to the loop: stopping or restarting it must not kill them.
KillMode=process
# SIGTERM lets a pass in progress finish its action and save the state.
TimeoutStopSec=5min

[Install]
WantedBy=default.target
`

func (systemd) Render(d Definition) ([]byte, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(d.Program, "/") {
		return nil, fmt.Errorf("a systemd unit needs an absolute program path, got %q", d.Program)
	}
	words := []string{systemdWord(d.Program)}
	for _, a := range d.Args {
		words = append(words, systemdWord(a))
	}
	var env strings.Builder
	for _, e := range d.Env {
		fmt.Fprintf(&env, "Environment=%s\n", systemdQuote(specifiers(e.Name+"="+e.Value)))
	}
	return fmt.Appendf(nil, unitTemplate, specifiers(d.Description), strings.Join(words, " "),
		specifiers(d.WorkDir), env.String()), nil
}

// systemdWord is one word of an ExecStart= line: systemd expands %
// specifiers and $VARIABLES there, and splits at blanks outside quotes.
func systemdWord(s string) string {
	s = strings.ReplaceAll(specifiers(s), "$", "$$")
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	return systemdQuote(s)
}

// specifiers escapes systemd's % specifiers (%h, %u, ...).
func specifiers(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// systemdQuote double-quotes s with C-style escapes, as systemd unquotes.
func systemdQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
