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
