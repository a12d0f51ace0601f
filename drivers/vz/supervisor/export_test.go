package supervisor

// MachineFor lets the external tests compare a boot with what the folder
// describes.
var MachineFor = machine
