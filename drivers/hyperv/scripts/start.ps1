$vm = Get-SbfVM $Name $Owner
switch ([string]$vm.State) {
  'Running' { }
  'Paused' { Resume-VM -VM $vm }
  default { Start-VM -VM $vm }
}
