//go:build wireinject

// The local environment: one box, or a laptop. Every adapter the registry
// has is usable; the AWS region is the one configured (or AWS_REGION).
// `go generate ./app/compose` (wire) writes wire_gen.go from these.

package compose

import (
	"context"

	"github.com/google/wire"
)

var localSet = wire.NewSet(configuredRegion)

func localAll(ctx context.Context, cfg Config) (*Service, func(), error) {
	wire.Build(localSet, commonSet, apiSet, consumerSet, newAllService)
	return nil, nil, nil
}

func localAPI(ctx context.Context, cfg Config) (*Service, func(), error) {
	wire.Build(localSet, commonSet, apiSet, newAPIService)
	return nil, nil, nil
}

func localConsumer(ctx context.Context, cfg Config) (*Service, func(), error) {
	wire.Build(localSet, commonSet, consumerSet, newOpsHandler, newConsumerService)
	return nil, nil, nil
}
