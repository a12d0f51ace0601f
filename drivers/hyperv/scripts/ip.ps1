$vm = Get-SbfVM $Name $Owner
Write-Json ([pscustomobject]@{
  State = [string]$vm.State
  IPv4 = @(Get-VMNetworkAdapter -VM $vm | ForEach-Object { $_.IPAddresses } | Where-Object { $_ -match '^\d{1,3}(\.\d{1,3}){3}$' })
})
