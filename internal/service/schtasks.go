package service

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf16"
)

// TaskName is the scheduled task, in a folder of its own.
const TaskName = `\SandboxForge\` + Name

// schtasks is a Task Scheduler task started at the user's logon, restarted
// when it fails, never stopped for running long. Task Scheduler gives its
// programs no environment of their own and keeps no output: the loop runs
// with the user's environment, and the caller passes sbf serve --log-file.
type schtasks struct{ dir string }

func (schtasks) Kind() string   { return "schtasks" }
func (m schtasks) Path() string { return windowsJoin(m.dir, Name+".xml") }
func (schtasks) Logs(d Definition) string {
	return d.LogFile
}

func (m schtasks) Install() []Step {
	return []Step{
		// /Create /F replaces the task but not a running copy of it.
		{Args: []string{"schtasks", "/End", "/TN", TaskName}, MayFail: true},
		{Args: []string{"schtasks", "/Create", "/TN", TaskName, "/XML", m.Path(), "/F"}},
		{Args: []string{"schtasks", "/Run", "/TN", TaskName}},
	}
}

func (schtasks) Uninstall() []Step {
	return []Step{
		{Args: []string{"schtasks", "/End", "/TN", TaskName}, MayFail: true},
		{Args: []string{"schtasks", "/Delete", "/TN", TaskName, "/F"}, MayFail: true},
	}
}

func (schtasks) Status() Step {
	return Step{Args: []string{"schtasks", "/Query", "/TN", TaskName, "/V", "/FO", "LIST"}, MayFail: true}
}

const taskTemplate = `<?xml version="1.0" encoding="UTF-16"?>
<!-- sbf's reconcile loop as a scheduled task: leases end (their VMs deleted)
     and drift is repaired with no other sbf running. Written by
     'sbf service install'; 'sbf service uninstall' removes it. -->
<Task version="1.2" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">
  <RegistrationInfo>
    <Description>%s</Description>
    <URI>%s</URI>
  </RegistrationInfo>
  <Triggers>
    <LogonTrigger>
      <Enabled>true</Enabled>
      <UserId>%s</UserId>
    </LogonTrigger>
  </Triggers>
  <Principals>
    <Principal id="Author">
      <UserId>%s</UserId>
      <LogonType>InteractiveToken</LogonType>
      <RunLevel>LeastPrivilege</RunLevel>
    </Principal>
  </Principals>
  <Settings>
    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>
    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>
    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>
    <StartWhenAvailable>true</StartWhenAvailable>
    <IdleSettings>
      <StopOnIdleEnd>false</StopOnIdleEnd>
      <RestartOnIdle>false</RestartOnIdle>
    </IdleSettings>
    <Enabled>true</Enabled>
    <ExecutionTimeLimit>PT0S</ExecutionTimeLimit>
    <RestartOnFailure>
      <Interval>PT1M</Interval>
      <Count>999</Count>
    </RestartOnFailure>
  </Settings>
  <Actions Context="Author">
    <Exec>
      <Command>%s</Command>
      <Arguments>%s</Arguments>
      <WorkingDirectory>%s</WorkingDirectory>
    </Exec>
  </Actions>
</Task>
`

// Render is the task's XML as UTF-16 with a byte order mark, the encoding
// its declaration names and schtasks /XML reads.
func (schtasks) Render(d Definition) ([]byte, error) {
	text, err := taskXML(d)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write([]byte{0xFF, 0xFE})
	for _, u := range utf16.Encode([]rune(strings.ReplaceAll(text, "\n", "\r\n"))) {
		b.Write([]byte{byte(u), byte(u >> 8)})
	}
	return b.Bytes(), nil
}

func taskXML(d Definition) (string, error) {
	if err := d.check(); err != nil {
		return "", err
	}
	if d.User == "" {
		return "", fmt.Errorf("a scheduled task needs the user it runs as")
	}
	if len(d.Env) > 0 {
		return "", fmt.Errorf("a scheduled task cannot carry environment variables (%s=...): "+
			"set them in the user's environment instead", d.Env[0].Name)
	}
	var args []string
	for _, a := range d.Args {
		args = append(args, windowsArg(a))
	}
	return fmt.Sprintf(taskTemplate, escape(d.Description), escape(TaskName), escape(d.User), escape(d.User),
		escape(d.Program), escape(strings.Join(args, " ")), escape(d.WorkDir)), nil
}

// windowsArg quotes one argument so CommandLineToArgvW (and Go's
// os.Args on Windows) reads it back unchanged.
func windowsArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for _, c := range s {
		switch c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteRune(c)
	}
	b.WriteString(strings.Repeat(`\`, slashes))
	b.WriteByte('"')
	return b.String()
}
