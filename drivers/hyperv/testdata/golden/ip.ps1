# sbf hyperv: ip
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
# end of parameters
$vm = Get-SbfVM $Name $Owner
Write-Json ([pscustomobject]@{
  State = [string]$vm.State
  IPv4 = @(Get-VMNetworkAdapter -VM $vm | ForEach-Object { $_.IPAddresses } | Where-Object { $_ -match '^\d{1,3}(\.\d{1,3}){3}$' })
})
