package hyperv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
)

// marker is what sbf writes into a VM's Notes: proof it made the VM, which
// sandbox of which workspace it is, and the one disk it may delete with it.
// Hyper-V names are not unique and carry no labels, so the marker, not the
// name, decides what sbf lists and touches.
type marker struct {
	ManagedBy string `json:"managed_by"` // always "sbf"
	Instance  string `json:"instance"`
	// Workspace is the workspace tag of the instance name (the first 8
	// hex digits of the workspace id): drivers see no more of it.
	Workspace string `json:"workspace"`
	Sandbox   string `json:"sandbox"`
	Disk      string `json:"disk"`
}

// listPrefix starts every marker; the list script reads only VMs whose
// Notes start with it.
const listPrefix = `{"managed_by":"sbf",`

// ownerPrefix starts the marker of one instance: a script acts only on a
// VM whose Notes start with it.
func ownerPrefix(instance string) string {
	return listPrefix + `"instance":` + jsonString(instance) + ","
}

func newMarker(instance, disk string) (marker, error) {
	tag, sandbox, ok := drivers.ParseInstanceName(instance)
	if !ok {
		return marker{}, fmt.Errorf("%q is not an instance name sbf makes (%sTAG-SANDBOX)", instance, drivers.Prefix)
	}
	return marker{ManagedBy: "sbf", Instance: instance, Workspace: tag, Sandbox: sandbox, Disk: disk}, nil
}

func (m marker) String() string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // paths may hold & < >; the Notes are read back as JSON, not HTML
	enc.Encode(m)
	return strings.TrimSuffix(b.String(), "\n")
}

// parseMarker reads a VM's Notes; ok is false for anything sbf did not
// write for an instance named name.
func parseMarker(notes, name string) (marker, bool) {
	if !strings.HasPrefix(notes, ownerPrefix(name)) {
		return marker{}, false
	}
	var m marker
	if err := json.Unmarshal([]byte(notes), &m); err != nil || m.ManagedBy != "sbf" || m.Instance != name {
		return marker{}, false
	}
	if _, _, ok := drivers.ParseInstanceName(name); !ok {
		return marker{}, false
	}
	return m, true
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
