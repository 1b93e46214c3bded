package app

import (
	"context"
	"strings"

	"github.com/google/wire"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/ports"
)

// dynamoSet keeps rides and resorts in DynamoDB, in the model the store's
// name ends with (dynamo-adopted, dynamo-abandoned). The tables must exist:
// docs/dynamodb.md.
var dynamoSet = wire.NewSet(
	provideDynamoAPI, provideDynamoRideStore,
	provideDynamoResortStore, wire.Bind(new(ports.ResortStore), new(*dynamo.ResortStore)),
	dynamoProbe,
)

func dynamoConfig(cfg Config) dynamo.Config {
	return dynamo.Config{
		Region:           cfg.Dynamo.Region,
		Endpoint:         cfg.Dynamo.Endpoint,
		TablePrefix:      cfg.Dynamo.TablePrefix,
		Model:            strings.TrimPrefix(cfg.Store, "dynamo-"),
		WriteConcurrency: cfg.Dynamo.WriteConcurrency,
	}
}

func provideDynamoAPI(ctx context.Context, cfg Config) (dynamo.API, error) {
	return dynamo.NewClient(ctx, dynamoConfig(cfg))
}

func provideDynamoRideStore(api dynamo.API, cfg Config) (ports.RideStore, error) {
	return dynamo.NewRideStore(api, dynamoConfig(cfg))
}

func provideDynamoResortStore(api dynamo.API, cfg Config) *dynamo.ResortStore {
	return dynamo.NewResortStore(api, dynamoConfig(cfg))
}

// dynamoProbe: readiness reads one (absent) item of the resort table, which
// proves the endpoint, the credentials and the table at once.
func dynamoProbe(resorts *dynamo.ResortStore) StoreProbe {
	return StoreProbe{Name: "dynamodb", Check: resorts.Ping}
}
