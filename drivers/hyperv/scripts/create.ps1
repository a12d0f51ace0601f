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
