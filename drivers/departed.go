package drivers

import (
	"context"
	"fmt"
	"time"
)

// Departure is a backend's account of an instance that something other than sbf removed: a
// cluster's lease controller deleting a VM whose lease ended, as the Kubernetes Event it
// left says. The backend reports what it observed; the engine decides what it means for the
// sandbox (an expiry, or drift).
type Departure struct {
	Instance string `json:"instance"`
	// Reason is the backend's own word for why (the Event's reason: LeaseExpired, NoLease,
	// OverOwnerCeiling); Expired says whether it was the lease that ended it.
	Reason  string `json:"reason"`
	Expired bool   `json:"expired"`
	// By names who removed it (a controller and its replica); Message is what it said.
	By      string    `json:"by,omitempty"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
}

// DepartureReporter is a backend that can say why named instances it no longer lists went,
// when something other than sbf removed them. Names it knows nothing about are left out; a
// name with several departures is reported by its newest. The engine asks only about
// instances it recorded as made and no longer finds, so a backend may look each one up.
type DepartureReporter interface {
	Departures(ctx context.Context, names []string) ([]Departure, error)
}

// String says why and when the instance went, for a state correction or a status row.
func (d Departure) String() string {
	by := ""
	if d.By != "" {
		by = " by " + d.By
	}
	return fmt.Sprintf("deleted%s at %s (%s)", by, d.At.UTC().Format(time.RFC3339), d.Reason)
}
