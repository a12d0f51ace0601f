package hyperv

import (
	"embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/hyperv/internal/psscript"
)

// Every script is the same prologue, a block of parameter assignments (the
// only place a value from outside appears, always as a literal), and a
// constant body from scripts/. Bodies never splice values into code.

//go:embed scripts/*.ps1
var bodies embed.FS

// prologue makes every error terminating (so a failed cmdlet fails the
// script with exit 1), keeps progress records off stderr, and defines what
// the bodies share: exit 3 for a missing VM, exit 4 for one sbf did not
// create, and JSON output that is plain ASCII whatever the console's code
// page.
const prologue = `$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
function Write-Json($Value) {
  $json = ConvertTo-Json -InputObject $Value -Depth 5 -Compress
  [regex]::Replace($json, '[^\x00-\x7f]', { param($m) '\u{0:x4}' -f [int][char]$m.Value })
}
function Get-SbfVM([string]$Name, [string]$Owner) {
  $named = @(Get-VM -Name $Name -ErrorAction SilentlyContinue)
  if ($named.Count -eq 0) { exit 3 }
  $ours = @($named | Where-Object { ([string]$_.Notes).StartsWith($Owner, [System.StringComparison]::Ordinal) })
  if ($ours.Count -ne 1) { exit 4 }
  return $ours[0]
}
`

// Exit codes the bodies use besides 0 and 1 (a thrown error).
const (
	exitNotFound = 3 // no VM has the name
	exitNotOwned = 4 // VMs have the name, but not exactly one carries sbf's marker
	exitRunning  = 5 // the change needs a stopped VM
	exitShrink   = 6 // the disk would shrink
)

// param is one assignment; value is a string, an int, an int64, a bool or
// a []string.
type param struct {
	name  string
	value any
}

// script is one PowerShell invocation.
type script struct {
	op     string // names the body: scripts/<op>.ps1
	params []param
}

// render writes the script. A value PowerShell cannot receive (a NUL
// cannot travel on a command line) is an error, never a truncated value.
func (s script) render() (string, error) {
	body, err := bodies.ReadFile("scripts/" + s.op + ".ps1")
	if err != nil {
		return "", fmt.Errorf("no PowerShell body for %s: %w", s.op, err)
	}
	var b strings.Builder
	b.WriteString(psscript.Header + s.op + "\n")
	b.WriteString(prologue)
	b.WriteString(psscript.Begin)
	for _, p := range s.params {
		lit, err := literal(p.value)
		if err != nil {
			return "", fmt.Errorf("%s: $%s: %w", s.op, p.name, err)
		}
		fmt.Fprintf(&b, "$%s = %s\n", p.name, lit)
	}
	b.WriteString(psscript.End)
	b.Write(body)
	return b.String(), nil
}

func literal(v any) (string, error) {
	switch v := v.(type) {
	case string:
		if strings.ContainsRune(v, 0) {
			return "", fmt.Errorf("%q contains a NUL character", v)
		}
		return quote(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case bool:
		if v {
			return "$true", nil
		}
		return "$false", nil
	case []string:
		items := make([]string, len(v))
		for i, s := range v {
			lit, err := literal(s)
			if err != nil {
				return "", err
			}
			items[i] = lit
		}
		return "@(" + strings.Join(items, ", ") + ")", nil
	}
	return "", fmt.Errorf("unsupported parameter type %T", v)
}

// quote makes s a single-quoted PowerShell string: nothing is expanded
// inside one ($, backticks and double quotes are plain text), and each
// character PowerShell reads as a single quote — the ASCII one and the
// typographic ‘ ’ ‚ ‛ — is doubled, as PowerShell's own
// CodeGeneration.EscapeSingleQuotedStringContent does.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for _, r := range s {
		if psscript.IsSingleQuote(r) {
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}

// The scripts each operation runs: the only places parameters are chosen.

func listScript() script { return script{op: "list", params: []param{{"Prefix", listPrefix}}} }

func (d *Driver) createScript(s drivers.Spec) (script, error) {
	disk := d.diskPath(s.Name)
	m, err := newMarker(s.Name, disk)
	if err != nil {
		return script{}, err
	}
	params := []param{{"Name", s.Name}, {"Base", d.parent(s)}, {"Storage", d.opts.StorageDir}, {"Disk", disk},
		{"Switch", d.opts.Switch}, {"Notes", m.String()}}
	return script{op: "create", params: append(params, resources(s)...)}, nil
}

// ownedScript acts on one of sbf's VMs: start, ip, stop, delete,
// reconfigure.
func (d *Driver) ownedScript(op, name string, extra ...param) script {
	params := append([]param{{"Name", name}, {"Owner", ownerPrefix(name)}}, extra...)
	if op == "delete" {
		params = append(params, param{"Disk", d.diskPath(name)})
	}
	return script{op: op, params: params}
}

func resources(s drivers.Spec) []param {
	return []param{{"CPUs", s.CPUs}, {"MemoryBytes", bytesOf(s.MemoryGiB)}, {"DiskBytes", bytesOf(s.DiskGiB)}}
}
