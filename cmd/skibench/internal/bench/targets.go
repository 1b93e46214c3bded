package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jackc/pgx/v5"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/dynamo/dynamosim"
	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/adapters/postgres"
	"github.com/skidata/skidata/app/compose"
)

// Env is where the stores live.
type Env struct {
	DatabaseURL string
	// DynamoEndpoint is a running DynamoDB (or dynalite); empty: Main
	// starts dynalite from test/dynamodb.
	DynamoEndpoint string
	DynamoRegion   string
	// DynamoWriteConcurrency is each DynamoDB store's requests in flight
	// per AddRides call (the service's --dynamo-write-concurrency).
	DynamoWriteConcurrency int
	// RunID makes this run's schema and table prefix unique.
	RunID string
	// Keep leaves the schema and tables in place for inspection.
	Keep bool
	// Throughput puts the partition-throughput model (1,000 WCU/s and
	// 3,000 RCU/s per partition key value) in front of the DynamoDB stores.
	Throughput bool
	// PartitionWriteUnits is the model's write units per partition key
	// value a second; 0 means AWS's 1,000.
	PartitionWriteUnits float64
}

// StoreNames are the stores of the service's one registry
// (app/compose/registry.go); OpenTarget must know how to give each a fresh,
// empty place, and a test fails when one is added that it does not.
var StoreNames = compose.StoreNames()

// OpenTarget wires the named store to a fresh, empty place: a new schema
// for postgres, new tables under a new prefix for DynamoDB.
func OpenTarget(ctx context.Context, env *Env, name string) (*Target, error) {
	switch {
	case name == "memory":
		s := memory.NewRideStore()
		return &Target{Name: name, Store: s, CountUnit: "rides", Close: func(context.Context) error { return nil }}, nil
	case name == "postgres":
		return openPostgres(ctx, env)
	case strings.HasPrefix(name, "dynamo-"):
		return openDynamo(ctx, env, name, strings.TrimPrefix(name, "dynamo-"))
	default:
		if slices.Contains(StoreNames, name) {
			return nil, fmt.Errorf("store %q is in the registry but skibench has no set-up for it: add one to OpenTarget", name)
		}
		return nil, fmt.Errorf("unknown store %q (known: %s)", name, strings.Join(StoreNames, ", "))
	}
}

func openPostgres(ctx context.Context, env *Env) (*Target, error) {
	schema := "skibench_" + env.RunID
	db, err := postgres.Open(ctx, postgres.Config{URL: env.DatabaseURL, Schema: schema})
	if err != nil {
		return nil, fmt.Errorf("postgres (set --database-url): %w", err)
	}
	return &Target{
		Name: "postgres", Store: db.Rides(), Count: db.CountRides, CountUnit: "rows", ServerProcess: "postgres",
		Settle: func(ctx context.Context) error { return analyzeSchema(ctx, env.DatabaseURL, schema) },
		Close: func(ctx context.Context) error {
			db.Close()
			if env.Keep {
				return nil
			}
			return dropSchema(ctx, env.DatabaseURL, schema)
		},
	}, nil
}

// analyzeSchema runs ANALYZE on every table of the run's schema. A
// deployment's autovacuum analyzes a table soon after a load changes a
// good part of it, and the service's reads are planned with those
// statistics; a bench that queried the fresh tables at once would time
// plans chosen without any (the season totals through the resort-first
// index instead of the primary key). It does not VACUUM: the pages just
// written stay not all-visible, so index-only scans still visit the heap
// for them, as they do for a deployment's newest rides until an
// insert-triggered vacuum (after a fifth of the table is new). ANALYZE
// with no table would analyze the whole database, other runs' schemas
// included: hence the list.
func analyzeSchema(ctx context.Context, url, schema string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("analyze schema %s: connect: %w", schema, err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, schema)
	if err != nil {
		return fmt.Errorf("analyze schema %s: list tables: %w", schema, err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("analyze schema %s: list tables: %w", schema, err)
	}
	if len(tables) == 0 {
		return fmt.Errorf("analyze schema %s: no tables", schema)
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = pgx.Identifier{schema, t}.Sanitize()
	}
	if _, err := conn.Exec(ctx, "ANALYZE "+strings.Join(names, ", ")); err != nil {
		return fmt.Errorf("analyze schema %s: %w", schema, err)
	}
	return nil
}

func dropSchema(ctx context.Context, url, schema string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("drop schema %s: connect: %w", schema, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

// openDynamo puts a proxy of its own in front of dynalite for the store
// (adapters/dynamo/dynamosim): it holds the requests to what AWS accepts, accounts
// the write units of every partition key value of the tables and indexes,
// and throttles them as AWS would when env.Throughput is set.
func openDynamo(ctx context.Context, env *Env, name, model string) (*Target, error) {
	if env.DynamoEndpoint == "" {
		return nil, errors.New("no DynamoDB endpoint (Main starts dynalite when --dynamo-endpoint is empty)")
	}
	px, err := dynamosim.StartProxy(env.DynamoEndpoint, dynamosim.Options{Throughput: env.Throughput, WriteUnits: env.PartitionWriteUnits})
	if err != nil {
		return nil, err
	}
	client := dynamosim.ClientFor(px.URL)
	cfg := dynamo.Config{
		Region: env.DynamoRegion, Endpoint: px.URL, Model: model,
		TablePrefix:      fmt.Sprintf("skibench_%s_%s_", env.RunID, model),
		WriteConcurrency: env.DynamoWriteConcurrency,
	}
	defs, err := dynamo.TableDefinitions(cfg.TablePrefix, model)
	if err != nil {
		px.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := dynamo.CreateTables(ctx, client, cfg.TablePrefix, model); err != nil {
		px.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s, err := dynamo.NewRideStore(client, cfg)
	if err != nil {
		px.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Target{
		Name: name, Store: s, Count: s.CountItems, CountUnit: "items", Capacity: s, Partitions: px.Partitions,
		Close: func(ctx context.Context) error {
			defer px.Close()
			if env.Keep {
				return nil
			}
			var errs []error
			for _, d := range defs {
				if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: d.TableName}); err != nil {
					errs = append(errs, fmt.Errorf("delete table %s: %w", *d.TableName, err))
				}
			}
			return errors.Join(errs...)
		},
	}, nil
}

// startDynalite runs dynalite from test/dynamodb for the run when no
// endpoint is given, and points env at it with dummy credentials.
func startDynalite(env *Env) (stop func(), err error) {
	srv, err := dynamosim.Start()
	if err != nil {
		return nil, fmt.Errorf("start dynalite (or pass --dynamo-endpoint): %w", err)
	}
	// Each store puts its own proxy in front of dynalite itself.
	env.DynamoEndpoint = srv.Upstream
	env.DynamoRegion = dynamosim.Region
	return srv.Stop, nil
}

// NewRunID is a run's unique suffix for schema and table names.
func NewRunID() string {
	return fmt.Sprintf("%d", time.Now().UnixNano()/int64(time.Millisecond))
}
