# sbf hyperv: reconfigure
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
$CPUs = 2
$MemoryBytes = 4294967296
$DiskBytes = 32212254720
# end of parameters
$vm = Get-SbfVM $Name $Owner
if ([string]$vm.State -ne 'Off') { exit 5 }
# PowerShell's variables ignore case: none below may be named like a parameter.
$vhdPath = (([string]$vm.Notes) | ConvertFrom-Json).disk
if (@(Get-VMHardDiskDrive -VM $vm | ForEach-Object { $_.Path }) -notcontains $vhdPath) { throw "the disk sbf made for '$Name' is no longer attached to it" }
$currentBytes = (Get-VHD -Path $vhdPath).Size
# Checked before anything changes, so a refused change changes nothing.
if ($DiskBytes -lt $currentBytes) { exit 6 }
Set-VM -VM $vm -ProcessorCount $CPUs -StaticMemory -MemoryStartupBytes $MemoryBytes
if ($DiskBytes -gt $currentBytes) { Resize-VHD -Path $vhdPath -SizeBytes $DiskBytes }
