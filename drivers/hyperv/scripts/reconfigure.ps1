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
