# Only VMs whose Notes carry sbf's marker are read at all.
$out = @(Get-VM | Where-Object { ([string]$_.Notes).StartsWith($Prefix, [System.StringComparison]::Ordinal) } | ForEach-Object {
  $vm = $_
  $size = -1
  try { $size = (Get-VHD -Path (([string]$vm.Notes) | ConvertFrom-Json).disk).Size } catch { }
  [pscustomobject]@{
    Name = $vm.Name
    State = [string]$vm.State
    Notes = [string]$vm.Notes
    CPUs = $vm.ProcessorCount
    MemoryBytes = $vm.MemoryStartup
    DiskBytes = $size
    IPv4 = @($vm.NetworkAdapters | ForEach-Object { $_.IPAddresses } | Where-Object { $_ -match '^\d{1,3}(\.\d{1,3}){3}$' })
  }
})
Write-Json $out
