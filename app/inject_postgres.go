package app

import (
	"context"
	"fmt"

	"github.com/google/wire"

	"github.com/skidata/skidata/adapters/postgres"
	"github.com/skidata/skidata/ports"
)

// postgresSet keeps rides and resorts in PostgreSQL: one pool shared by
// both stores, closed by the injector's cleanup.
var postgresSet = wire.NewSet(
	openPostgres,
	postgresRides, wire.Bind(new(ports.RideStore), new(*postgres.RideStore)),
	postgresResorts, wire.Bind(new(ports.ResortStore), new(*postgres.ResortStore)),
	postgresProbe,
)

// postgresConfig maps app's flags onto the adapter's configuration.
func postgresConfig(c PostgresConfig) postgres.Config {
	return postgres.Config{
		URL:              c.URL,
		MaxConns:         int32(c.MaxConns), // Validate bounds it to int32
		StatementTimeout: c.StatementTimeout,
		ConnectTimeout:   c.ConnectTimeout,
		Schema:           c.Schema,
	}
}

// openPostgres connects and migrates; a database that is down fails the
// start-up with the adapter's error, which names the URL (password masked).
func openPostgres(ctx context.Context, cfg Config) (*postgres.DB, func(), error) {
	db, err := postgres.Open(ctx, postgresConfig(cfg.Postgres))
	if err != nil {
		return nil, nil, err
	}
	return db, db.Close, nil
}

func postgresRides(db *postgres.DB) *postgres.RideStore     { return db.Rides() }
func postgresResorts(db *postgres.DB) *postgres.ResortStore { return db.Resorts() }

// postgresProbe lets /readyz report a database that stopped answering.
func postgresProbe(db *postgres.DB) StoreProbe {
	return StoreProbe{Name: "postgres", Check: db.Ping}
}

// MigratePostgres applies the pending migrations to the database cfg names
// and returns the schema version reached (`skiapi migrate`). Opening the
// database migrates it; the version is read back so the answer is what the
// database holds, not what this binary hoped to apply.
func MigratePostgres(ctx context.Context, cfg Config) (int, error) {
	db, err := openForCommand(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return db.SchemaVersion(ctx)
}

// SeedPostgres loads the demo resorts into the database cfg names (`skiapi
// seed`); resorts already there keep their seasons. It returns how many
// resorts the store holds afterwards.
func SeedPostgres(ctx context.Context, cfg Config) (int, error) {
	db, err := openForCommand(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if err := SeedDemoResorts(ctx, db.Resorts()); err != nil {
		return 0, err
	}
	rs, err := db.Resorts().Resorts(ctx)
	if err != nil {
		return 0, fmt.Errorf("count resorts after seeding: %w", err)
	}
	return len(rs), nil
}

// openForCommand opens (and so migrates) the database for a one-shot
// command; migrate and seed only mean something for a database.
func openForCommand(ctx context.Context, cfg Config) (*postgres.DB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Store != "postgres" {
		return nil, fmt.Errorf("--store %s has nothing to migrate or seed; use --store postgres --database-url ...", cfg.Store)
	}
	return postgres.Open(ctx, postgresConfig(cfg.Postgres))
}
