package app

import (
	"context"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// Ingest is the write path's use case: check the ride against the reference
// data, then hand it to the queue. It answers only once the queue holds it.
type Ingest struct {
	catalog *Catalog
	pub     ports.Publisher
}

var _ ports.RideIngester = (*Ingest)(nil)

// NewIngest returns the ingest service.
func NewIngest(catalog *Catalog, pub ports.Publisher) *Ingest {
	return &Ingest{catalog: catalog, pub: pub}
}

// AddRide implements ports.RideIngester.
func (in *Ingest) AddRide(ctx context.Context, ride domain.LiftRide) error {
	if err := in.catalog.CheckRide(ctx, ride.ResortID(), ride.SeasonID()); err != nil {
		return err
	}
	return in.pub.Publish(ctx, ride)
}
