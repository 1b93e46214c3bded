//go:build wireinject

// The ec2 environment (--profile ec2): the same graphs, but the AWS region,
// when not configured, is the instance's, from the metadata service.

package compose

import (
	"context"

	"github.com/google/wire"
)

var ec2Set = wire.NewSet(regionOrInstance)

func ec2All(ctx context.Context, cfg Config) (*Service, func(), error) {
	wire.Build(ec2Set, commonSet, apiSet, consumerSet, newAllService)
	return nil, nil, nil
}

func ec2API(ctx context.Context, cfg Config) (*Service, func(), error) {
	wire.Build(ec2Set, commonSet, apiSet, newAPIService)
	return nil, nil, nil
}

func ec2Consumer(ctx context.Context, cfg Config) (*Service, func(), error) {
	wire.Build(ec2Set, commonSet, consumerSet, newOpsHandler, newConsumerService)
	return nil, nil, nil
}
