//go:build wireinject

// The injectors: one per store family. Each lists the provider sets it is
// built from; `go generate ./app` (wire) writes wire_gen.go from them.

package app

import (
	"context"

	"github.com/google/wire"
)

func initMemory(ctx context.Context, cfg Config) (*Service, func(), error) {
	wire.Build(coreSet, queueSet, memorySet)
	return nil, nil, nil
}

func initPostgres(ctx context.Context, cfg Config) (*Service, func(), error) {
	wire.Build(coreSet, queueSet, postgresSet)
	return nil, nil, nil
}

func initDynamo(ctx context.Context, cfg Config) (*Service, func(), error) {
	wire.Build(coreSet, queueSet, dynamoSet)
	return nil, nil, nil
}
