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
