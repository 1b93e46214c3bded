package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skidata/skidata/adapters/dynamo"
	"github.com/skidata/skidata/adapters/postgres"
	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/app"
	"github.com/skidata/skidata/app/compose"
)

// errUsage marks an error in how a one-shot command was asked for (a flag
// that does not fit it), as opposed to a failure while doing it; skiapi
// exits 2 for the first and 1 for the second.
var errUsage = errors.New("usage")

// usageErr marks err as a usage error without changing its message.
func usageErr(err error) error { return usageError{err} }

type usageError struct{ err error }

func (u usageError) Error() string   { return u.err.Error() }
func (u usageError) Unwrap() []error { return []error{errUsage, u.err} }

// createDynamoTables creates the tables and the index the configured
// DynamoDB store needs (`skiapi tables create`): on-demand billing, and it
// returns once they are active. Tables that exist are left as they are, so
// running it again is harmless.
func createDynamoTables(ctx context.Context, cfg compose.Config) error {
	client, dc, err := dynamoForCommand(ctx, cfg)
	if err != nil {
		return err
	}
	return dynamo.CreateTables(ctx, client, dc.TablePrefix, dc.Model)
}

// describeDynamoTables returns what DynamoDB reports about the configured
// store's tables (`skiapi tables describe`): status, keys, indexes, billing
// and its (approximate, six-hourly) item counts.
func describeDynamoTables(ctx context.Context, cfg compose.Config) (string, error) {
	client, dc, err := dynamoForCommand(ctx, cfg)
	if err != nil {
		return "", err
	}
	return dynamo.DescribeTables(ctx, client, dc.TablePrefix, dc.Model)
}

// dynamoForCommand is the client a one-shot command uses; the tables only
// mean something for a DynamoDB store, and which tables depends on its model.
func dynamoForCommand(ctx context.Context, cfg compose.Config) (*dynamodb.Client, dynamo.Config, error) {
	if err := cfg.Validate(); err != nil {
		return nil, dynamo.Config{}, usageErr(err)
	}
	if !strings.HasPrefix(cfg.Store, compose.DynamoStorePrefix) {
		return nil, dynamo.Config{}, usageErr(fmt.Errorf("--store %s has no DynamoDB tables; use one of --store %s%s", cfg.Store, compose.DynamoStorePrefix, strings.Join(dynamo.Models, "|"+compose.DynamoStorePrefix)))
	}
	dc := cfg.DynamoConfig()
	client, err := dynamo.NewClient(ctx, dc)
	return client, dc, err
}

// migratePostgres applies the pending migrations to the database cfg names
// and returns the schema version reached (`skiapi migrate`). Opening the
// database migrates it; the version is read back so the answer is what the
// database holds, not what this binary hoped to apply.
func migratePostgres(ctx context.Context, cfg compose.Config) (int, error) {
	db, err := openForCommand(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return db.SchemaVersion(ctx)
}

// seedStore loads the demo resorts into the store cfg names (`skiapi
// seed`): a PostgreSQL database or a DynamoDB model's resort table, whose
// tables must exist (`skiapi tables create`). Resorts already there keep
// their seasons. It returns how many resorts the store holds afterwards.
func seedStore(ctx context.Context, cfg compose.Config) (int, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if err := requireDurableStore(cfg, "seed"); err != nil {
		return 0, err
	}
	st, closeStore, err := compose.OpenStore(ctx, compose.Deps{Config: cfg})
	if err != nil {
		return 0, err
	}
	defer closeStore()
	if err := app.SeedDemoResorts(ctx, st.Resorts); err != nil {
		return 0, err
	}
	rs, err := st.Resorts.Resorts(ctx)
	if err != nil {
		return 0, fmt.Errorf("count resorts after seeding: %w", err)
	}
	return len(rs), nil
}

// requireDurableStore refuses a store that keeps nothing once the command
// ends (what would be written there is lost at once); what names the
// command's work. This is the one place the operations commands decide
// durability, until the registry's store entries say it themselves.
func requireDurableStore(cfg compose.Config, what string) error {
	if cfg.Store == "memory" {
		return usageErr(fmt.Errorf("--store memory keeps nothing after the command; %s a store that lasts: --store postgres or one of the dynamo-* stores", what))
	}
	return nil
}

// openForCommand opens (and so migrates) the database for a one-shot
// command; migrate and seed only mean something for a database.
func openForCommand(ctx context.Context, cfg compose.Config) (*postgres.DB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Store != "postgres" {
		return nil, fmt.Errorf("--store %s has nothing to migrate or seed; use --store postgres --database-url ...", cfg.Store)
	}
	return postgres.Open(ctx, cfg.Postgres)
}

// listDeadLetters returns up to limit rides from the dead-letter queue
// without removing them.
func listDeadLetters(ctx context.Context, cfg compose.Config, limit int) ([]rabbitmq.DeadLetter, error) {
	var out []rabbitmq.DeadLetter
	err := withBroker(ctx, cfg, func(b *rabbitmq.Broker) error {
		var err error
		out, err = b.DLQList(ctx, limit)
		return err
	})
	return out, err
}

// replayDeadLetters moves every readable dead letter back to its ride queue
// and returns how many it moved; unreadable ones stay.
func replayDeadLetters(ctx context.Context, cfg compose.Config) (int, error) {
	var n int
	err := withBroker(ctx, cfg, func(b *rabbitmq.Broker) error {
		var err error
		n, err = b.DLQReplay(ctx)
		return err
	})
	return n, err
}

// withBroker connects for a one-shot dlq command; there is a dead-letter
// queue only with --queue rabbitmq.
func withBroker(ctx context.Context, cfg compose.Config, do func(*rabbitmq.Broker) error) error {
	if err := cfg.Validate(); err != nil {
		return usageErr(err)
	}
	if cfg.Queue != "rabbitmq" {
		return usageErr(fmt.Errorf("--queue %s has no dead-letter queue; use --queue rabbitmq with the service's --amqp-* flags", cfg.Queue))
	}
	rc, err := cfg.RabbitMQConfig(ctx)
	if err != nil {
		return err
	}
	b, err := rabbitmq.Open(ctx, rc)
	if err != nil {
		return err
	}
	defer func() { _ = b.Disconnect() }()
	return do(b)
}
