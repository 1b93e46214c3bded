//go:build wireinject

// The injectors, one per role; `go generate ./app/compose` (wire) writes
// wire_gen.go from them. They differ in what they build: all builds the
// API and the persister, api only the API, consumer only the persister and
// the operations endpoints. The deployment environment differs only in
// where the AWS region comes from, which Build passes in.

package compose

import (
	"context"

	"github.com/google/wire"
)

func buildAll(ctx context.Context, cfg Config, region RegionSource) (*Service, func(), error) {
	wire.Build(commonSet, apiSet, consumerSet,
		wire.Struct(new(Service), "cfg", "log", "handler", "persister", "sub", "stats", "metrics"))
	return nil, nil, nil
}

func buildAPI(ctx context.Context, cfg Config, region RegionSource) (*Service, func(), error) {
	wire.Build(commonSet, apiSet,
		wire.Struct(new(Service), "cfg", "log", "handler", "stats", "metrics"))
	return nil, nil, nil
}

func buildConsumer(ctx context.Context, cfg Config, region RegionSource) (*Service, func(), error) {
	wire.Build(commonSet, consumerSet, newOpsHandler,
		wire.Struct(new(Service), "cfg", "log", "handler", "persister", "sub", "stats", "metrics"))
	return nil, nil, nil
}
