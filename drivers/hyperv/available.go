package hyperv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/crypto/ssh"
)

// probe is what the probe script reports about the host.
type probe struct {
	PSVersion   string  `json:"PSVersion"`
	PSEdition   string  `json:"PSEdition"`
	HyperV      bool    `json:"HyperV"`
	Elevated    bool    `json:"Elevated"`
	Switches    psArray `json:"Switches"`
	SwitchError string  `json:"SwitchError"`
}

func (d *Driver) checkHost() error {
	if d.opts.HostOS != "windows" {
		return unavailable("unsupported_host_os",
			fmt.Sprintf("unsupported host OS '%s'; Hyper-V needs Windows", d.opts.HostOS),
			"run sbf on Windows 10/11 (Pro, Enterprise or Education) or Windows Server with Hyper-V enabled",
			`on this host use the lima driver: [vm] driver = "lima" (or "auto")`)
	}
	return nil
}

// findPowerShell takes SBF_HYPERV_POWERSHELL (Options.PowerShell), else
// Windows PowerShell, else PowerShell 7, on PATH or where they install.
func (d *Driver) findPowerShell() error {
	if p := d.opts.PowerShell; p != "" {
		if !isExecutable(p) {
			return unavailable("backend_binary_missing", p+" (SBF_HYPERV_POWERSHELL) is not an executable file",
				"point SBF_HYPERV_POWERSHELL at powershell.exe or pwsh.exe, or unset it")
		}
		d.powershell = p
		return nil
	}
	var candidates []string
	for _, dir := range filepath.SplitList(d.opts.Getenv("PATH")) {
		for _, n := range []string{"powershell.exe", "powershell", "pwsh.exe", "pwsh"} {
			candidates = append(candidates, filepath.Join(dir, n))
		}
	}
	if root := d.opts.Getenv("SystemRoot"); root != "" {
		candidates = append(candidates, filepath.Join(root, "System32", "WindowsPowerShell", "v1.0", "powershell.exe"))
	}
	if pf := d.opts.Getenv("ProgramFiles"); pf != "" {
		candidates = append(candidates, filepath.Join(pf, "PowerShell", "7", "pwsh.exe"))
	}
	for _, c := range candidates {
		if isExecutable(c) {
			d.powershell = c
			return nil
		}
	}
	return unavailable("backend_binary_missing", "neither powershell.exe nor pwsh was found in PATH",
		`Windows PowerShell ships with Windows: check that %SystemRoot%\System32\WindowsPowerShell\v1.0 is on PATH`,
		"or install PowerShell 7 (winget install Microsoft.PowerShell), or set SBF_HYPERV_POWERSHELL to its path")
}

// isExecutable: on Windows any regular file runs; elsewhere (the tests'
// fake) it needs an execute bit.
func isExecutable(p string) bool {
	info, err := os.Stat(p)
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	return runtime.GOOS == "windows" || info.Mode()&0o111 != 0
}

func (d *Driver) runProbe(ctx context.Context) error {
	out, err := d.run(ctx, script{op: "probe"})
	if err != nil {
		return unavailable(
			"backend_binary_not_executable",
			fmt.Sprintf("%s could not run sbf's probe: %v", d.powershell, err),
			"check that "+d.powershell+" starts: "+d.powershell+` -NoProfile -Command "$PSVersionTable"`,
		)
	}
	if err := json.Unmarshal(out, &d.probe); err != nil {
		return fmt.Errorf("reading what %s reported about Hyper-V: %w (output %.200q)", d.powershell, err, out)
	}
	return nil
}

// checkHyperV turns the probe into guidance: the cmdlets first, then the
// right to use them.
func (d *Driver) checkHyperV() error {
	if !d.probe.HyperV {
		return unavailable(
			"hyperv_unavailable",
			"the Hyper-V PowerShell module (New-VM, New-VHD) is not available",
			"enable Hyper-V as Administrator: Enable-WindowsOptionalFeature -Online -FeatureName Microsoft-Hyper-V -All, "+
				"then restart",
			"Windows Home has no Hyper-V: use Pro, Enterprise, Education or Server",
		)
	}
	if !d.probe.Elevated {
		return unavailable(
			"hyperv_permission_denied",
			"this user may not manage Hyper-V (not elevated, not in Hyper-V Administrators)",
			"run sbf from an elevated prompt (Run as administrator)",
			"or, once, as Administrator: Add-LocalGroupMember -SID S-1-5-32-578 -Member $env:USERNAME, then sign out and in",
		)
	}
	return nil
}

// checkBase finds the parent disk a spec's instance would be made from.
func (d *Driver) checkBase(parent string) error {
	if parent == "" {
		return unavailable("hyperv_prerequisites_missing", "HYPERV_BASE_VHDX is not set",
			"set HYPERV_BASE_VHDX to a Generation 2 Linux VHDX whose sshd accepts HYPERV_SSH_KEY_PATH for HYPERV_SSH_USER",
			`or name one per sandbox: [vm.image] location = 'C:\images\base.vhdx'`)
	}
	if !fileExists(parent) {
		return unavailable("hyperv_prerequisites_missing", "the base image "+parent+" does not exist",
			"check HYPERV_BASE_VHDX (or [vm.image] location): it must name a .vhdx file on this host")
	}
	return nil
}

// checkKey proves the SSH key exists and sbf can use it.
func (d *Driver) checkKey() error {
	key := d.opts.SSHKey
	if key == "" {
		return unavailable("ssh_key_missing", "no SSH key: HYPERV_SSH_KEY_PATH is not set and no home folder is known",
			"set HYPERV_SSH_KEY_PATH to the private key the base image authorizes for "+d.opts.SSHUser)
	}
	data, err := os.ReadFile(key)
	if err != nil {
		return unavailable("ssh_key_missing", "the SSH key "+key+" cannot be read: "+err.Error(),
			"set HYPERV_SSH_KEY_PATH to the private key the base image authorizes for "+d.opts.SSHUser,
			"or make one (ssh-keygen -t ed25519) and authorize its .pub in the base image")
	}
	if _, err := ssh.ParsePrivateKey(data); err != nil {
		var missing *ssh.PassphraseMissingError
		reason := "the SSH key " + key + " cannot be used: " + err.Error()
		if errors.As(err, &missing) {
			reason = "the SSH key " + key + " is protected by a passphrase, which sbf cannot enter"
		}
		return unavailable("ssh_key_unusable", reason, "use an unencrypted key for sbf's VMs (ssh-keygen -t ed25519 -N '')")
	}
	return nil
}

// hasSwitch reports whether the probe saw the configured switch.
func (d *Driver) hasSwitch() bool {
	for _, s := range d.probe.Switches {
		if strings.EqualFold(s, d.opts.Switch) {
			return true
		}
	}
	return false
}
