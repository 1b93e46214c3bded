package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/wire"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/ports"
)

// dynamoSet keeps rides and resorts in DynamoDB, in the model the store's
// name ends with (dynamo-adopted, dynamo-abandoned, dynamo-counters). The
// tables must exist:
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

// provideDynamoAPI connects and checks, before anything is served, that
// the region is known and the tables exist: a missing dependency stops the
// start with a message naming it.
func provideDynamoAPI(ctx context.Context, cfg Config) (dynamo.API, error) {
	dc := dynamoConfig(cfg)
	if dc.Region == "" && Profiles[cfg.Profile].RegionFromInstance {
		region, err := instanceRegion(ctx)
		if err != nil {
			return nil, err
		}
		dc.Region = region
	}
	client, err := dynamo.NewClient(ctx, dc)
	if err != nil {
		return nil, err
	}
	checkCtx, cancel := context.WithTimeout(ctx, startupCheckTimeout)
	defer cancel()
	if err := dynamo.CheckTables(checkCtx, client, dc.TablePrefix, dc.Model); err != nil {
		where := "AWS"
		if dc.Endpoint != "" {
			where = dc.Endpoint
		}
		return nil, fmt.Errorf("DynamoDB (%s, region %s) not usable: %w", where, dc.Region, err)
	}
	return client, nil
}

func provideDynamoRideStore(api dynamo.API, cfg Config, m ports.Metrics) (ports.RideStore, error) {
	dc := dynamoConfig(cfg)
	dc.Metrics = m // consumed capacity and throttles, by table
	return dynamo.NewRideStore(api, dc)
}

func provideDynamoResortStore(api dynamo.API, cfg Config) *dynamo.ResortStore {
	return dynamo.NewResortStore(api, dynamoConfig(cfg))
}

// dynamoProbe: readiness reads one (absent) item of the resort table, which
// proves the endpoint, the credentials and the table at once.
func dynamoProbe(resorts *dynamo.ResortStore) StoreProbe {
	return StoreProbe{Name: "dynamodb", Check: resorts.Ping}
}

// CreateDynamoTables creates the tables and the index the configured
// DynamoDB store needs (`skiapi tables create`): on-demand billing, and it
// returns once they are active. Tables that exist are left as they are, so
// running it again is harmless.
func CreateDynamoTables(ctx context.Context, cfg Config) error {
	client, dc, err := dynamoForCommand(ctx, cfg)
	if err != nil {
		return err
	}
	return dynamo.CreateTables(ctx, client, dc.TablePrefix, dc.Model)
}

// DescribeDynamoTables returns what DynamoDB reports about the configured
// store's tables (`skiapi tables describe`): status, keys, indexes, billing
// and its (approximate, six-hourly) item counts.
func DescribeDynamoTables(ctx context.Context, cfg Config) (string, error) {
	client, dc, err := dynamoForCommand(ctx, cfg)
	if err != nil {
		return "", err
	}
	return dynamo.DescribeTables(ctx, client, dc.TablePrefix, dc.Model)
}

// dynamoForCommand is the client a one-shot command uses; the tables only
// mean something for a DynamoDB store, and which tables depends on its model.
func dynamoForCommand(ctx context.Context, cfg Config) (*dynamodb.Client, dynamo.Config, error) {
	if err := cfg.Validate(); err != nil {
		return nil, dynamo.Config{}, usage(err)
	}
	if !strings.HasPrefix(cfg.Store, "dynamo-") {
		return nil, dynamo.Config{}, usage(fmt.Errorf("--store %s has no DynamoDB tables; use --store dynamo-adopted or --store dynamo-abandoned", cfg.Store))
	}
	dc := dynamoConfig(cfg)
	client, err := dynamo.NewClient(ctx, dc)
	return client, dc, err
}
