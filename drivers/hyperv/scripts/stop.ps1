$vm = Get-SbfVM $Name $Owner
switch ([string]$vm.State) {
  'Off' { }
  'Saved' { Remove-VMSavedState -VM $vm }
  default { Stop-VM -VM $vm -TurnOff -Force }
}
