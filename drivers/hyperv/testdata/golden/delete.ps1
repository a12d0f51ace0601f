# sbf hyperv: delete
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
$Name = 'sbf-0123abcd-api'
$Owner = '{"managed_by":"sbf","instance":"sbf-0123abcd-api",'
$Disk = 'C:\ProgramData\sbf\hyperv\sbf-0123abcd-api.vhdx'
# end of parameters
$named = @(Get-VM -Name $Name -ErrorAction SilentlyContinue)
if ($named.Count -eq 0) {
  # Gone already; a disk left at sbf's path by an interrupted delete goes too.
  if (Test-Path -LiteralPath $Disk) { Remove-Item -LiteralPath $Disk -Force }
  exit 3
}
$vm = Get-SbfVM $Name $Owner
$marker = ([string]$vm.Notes) | ConvertFrom-Json
$attached = @(Get-VMHardDiskDrive -VM $vm | ForEach-Object { $_.Path })
if ([string]$vm.State -ne 'Off') { Stop-VM -VM $vm -TurnOff -Force }
Remove-VM -VM $vm -Force
# Only the disk sbf made for this VM, and only while it was attached to it.
if ($marker.disk -and ($attached -contains $marker.disk) -and (Test-Path -LiteralPath $marker.disk)) {
  Remove-Item -LiteralPath $marker.disk -Force
}
