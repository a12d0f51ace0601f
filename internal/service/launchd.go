package service

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// launchd is a LaunchAgent in the user's GUI domain: started at login,
// restarted when it fails, its messages in ~/Library/Logs/sandboxforge.
type launchd struct {
	dir string
	uid int
}

func (launchd) Kind() string   { return "launchd" }
func (m launchd) Path() string { return path.Join(m.dir, Label+".plist") }
func (launchd) Logs(d Definition) string {
	return d.LogFile
}

func (m launchd) target() string { return "gui/" + strconv.Itoa(m.uid) + "/" + Label }

func (m launchd) Install() []Step {
	return []Step{
		// bootstrap refuses a label already loaded: unload an older copy first.
		{Args: []string{"launchctl", "bootout", m.target()}, MayFail: true},
		{Args: []string{"launchctl", "enable", m.target()}},
		{Args: []string{"launchctl", "bootstrap", "gui/" + strconv.Itoa(m.uid), m.Path()}},
	}
}

func (m launchd) Uninstall() []Step {
	return []Step{{Args: []string{"launchctl", "bootout", m.target()}, MayFail: true}}
}

func (m launchd) Status() Step {
	return Step{Args: []string{"launchctl", "print", m.target()}, MayFail: true}
}

const plistHeader = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- sbf's reconcile loop as a launchd agent: leases end (their VMs deleted)
     and drift is repaired with no other sbf running. Written by
     'sbf service install'; 'sbf service uninstall' removes it. -->
<plist version="1.0">
<dict>
`

func (launchd) Render(d Definition) ([]byte, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.LogFile == "" {
		return nil, fmt.Errorf("a launchd agent needs a log file")
	}
	var b bytes.Buffer
	b.WriteString(plistHeader)
	key(&b, "Label")
	str(&b, "\t", Label)
	key(&b, "ProgramArguments")
	b.WriteString("\t<array>\n")
	for _, a := range append([]string{d.Program}, d.Args...) {
		str(&b, "\t\t", a)
	}
	b.WriteString("\t</array>\n")
	key(&b, "WorkingDirectory")
	str(&b, "\t", d.WorkDir)
	if len(d.Env) > 0 {
		key(&b, "EnvironmentVariables")
		b.WriteString("\t<dict>\n")
		for _, e := range d.Env {
			b.WriteString("\t\t<key>" + escape(e.Name) + "</key>\n")
			str(&b, "\t\t", e.Value)
		}
		b.WriteString("\t</dict>\n")
	}
	b.WriteString(`	<key>RunAtLoad</key>
	<true/>
	<!-- Restart when it fails, not when it is stopped. -->
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>10</integer>
	<key>ProcessType</key>
	<string>Background</string>
	<!-- The VMs a pass boots (Lima's host agents, vz-run supervisors) belong
	     to the user, not to the loop: stopping it must not kill them. -->
	<key>AbandonProcessGroup</key>
	<true/>
`)
	key(&b, "StandardOutPath")
	str(&b, "\t", d.LogFile)
	key(&b, "StandardErrorPath")
	str(&b, "\t", d.LogFile)
	b.WriteString("</dict>\n</plist>\n")
	return b.Bytes(), nil
}

func key(b *bytes.Buffer, k string) { b.WriteString("\t<key>" + k + "</key>\n") }

func str(b *bytes.Buffer, indent, s string) {
	b.WriteString(indent + "<string>" + escape(s) + "</string>\n")
}

// escape makes s element text: quotes need no escaping there, and
// leaving them readable keeps the file readable.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
