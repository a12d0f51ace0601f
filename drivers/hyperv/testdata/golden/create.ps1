# sbf hyperv: create
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
$Base = 'C:\images\ubuntu-24.04.vhdx'
$Storage = 'C:\ProgramData\sbf\hyperv'
$Disk = 'C:\ProgramData\sbf\hyperv\sbf-0123abcd-api.vhdx'
$Switch = 'Default Switch'
$Notes = '{"managed_by":"sbf","instance":"sbf-0123abcd-api","workspace":"0123abcd","sandbox":"api","disk":"C:\\ProgramData\\sbf\\hyperv\\sbf-0123abcd-api.vhdx"}'
$CPUs = 2
$MemoryBytes = 4294967296
$DiskBytes = 32212254720
# end of parameters
if (@(Get-VM -Name $Name -ErrorAction SilentlyContinue).Count -gt 0) { throw "a VM named '$Name' already exists" }
if (-not (Test-Path -LiteralPath $Base -PathType Leaf)) { throw "the base image '$Base' does not exist (HYPERV_BASE_VHDX)" }
$baseBytes = (Get-VHD -Path $Base).Size
if ($DiskBytes -lt $baseBytes) { throw "disk_gib is smaller than the base image '$Base' ($($baseBytes / 1GB) GiB): set disk_gib to at least that" }
[System.IO.Directory]::CreateDirectory($Storage) | Out-Null
# No VM has the name, so a disk at sbf's path for it is left from an interrupted create.
if (Test-Path -LiteralPath $Disk) { Remove-Item -LiteralPath $Disk -Force }
New-VHD -Path $Disk -ParentPath $Base -Differencing | Out-Null
$vm = $null
try {
  if ($DiskBytes -gt $baseBytes) { Resize-VHD -Path $Disk -SizeBytes $DiskBytes }
  $vm = New-VM -Name $Name -Generation 2 -MemoryStartupBytes $MemoryBytes -VHDPath $Disk -SwitchName $Switch
  # The marker first: a VM without it is one sbf would never list again.
  Set-VM -VM $vm -Notes $Notes
  Set-VM -VM $vm -ProcessorCount $CPUs -StaticMemory -AutomaticCheckpointsEnabled $false
  # Linux guests are signed by Microsoft's UEFI CA, not the Windows one Secure Boot defaults to.
  Set-VMFirmware -VM $vm -SecureBootTemplate 'MicrosoftUEFICertificateAuthority'
} catch {
  if ($null -ne $vm) { Remove-VM -VM $vm -Force }
  Remove-Item -LiteralPath $Disk -Force -ErrorAction SilentlyContinue
  throw
}
