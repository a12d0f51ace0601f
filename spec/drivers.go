package spec

// Drivers are the backends a spec may name, whether or not this build
// links them: a spec is valid on every host, and a backend this build or
// host cannot run is the engine's BACKEND_UNAVAILABLE, with next steps,
// not a configuration error. (drivers/all's tests keep every linked
// backend in this list.)
var Drivers = []string{"hyperv", "kubevirt", "lima", "sim", "vz"}
