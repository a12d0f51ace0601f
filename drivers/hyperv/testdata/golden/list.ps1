# sbf hyperv: list
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
$Prefix = '{"managed_by":"sbf",'
# end of parameters
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
