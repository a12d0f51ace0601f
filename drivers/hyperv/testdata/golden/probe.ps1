# sbf hyperv: probe
$ErrorActionPreference = 'Stop'
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
# parameters
# end of parameters
# What sbf needs from this host: the Hyper-V cmdlets, the right to use
# them (Administrators or Hyper-V Administrators, S-1-5-32-578), switches.
$principal = New-Object Security.Principal.WindowsPrincipal([Security.Principal.WindowsIdentity]::GetCurrent())
$r = [ordered]@{
  PSVersion = $PSVersionTable.PSVersion.ToString()
  PSEdition = [string]$PSVersionTable.PSEdition
  HyperV = [bool](Get-Command -Name New-VM -ErrorAction SilentlyContinue) -and [bool](Get-Command -Name New-VHD -ErrorAction SilentlyContinue)
  Elevated = $principal.IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator) -or $principal.IsInRole([Security.Principal.SecurityIdentifier]'S-1-5-32-578')
  Switches = @()
  SwitchError = ''
}
if ($r.HyperV -and $r.Elevated) {
  try { $r.Switches = @(Get-VMSwitch | ForEach-Object { $_.Name }) } catch { $r.SwitchError = $_.Exception.Message }
}
Write-Json ([pscustomobject]$r)
