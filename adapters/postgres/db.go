package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skidata/skidata/domain"
)

// DB is an open connection pool to one database (and schema). It hands out
// the two stores, which share the pool.
type DB struct {
	pool   *pgxpool.Pool
	schema string
	url    string // masked, for messages
}

// Open connects to the database, checks that it answers and applies any
// pending migrations. A database that cannot be reached is an error wrapping
// domain.ErrUnavailable and naming the URL with its password masked.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	masked := MaskURL(cfg.URL)
	pc, err := cfg.poolConfig()
	if err != nil {
		return nil, fmt.Errorf("postgres: configure pool for %s: %w", masked, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: create pool for %s: %w", masked, err)
	}
	// The pool connects lazily; ping now so that a database that is down is
	// reported at start-up, not on the first ride.
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		if pgErr, fix := refusedForGood(err); pgErr != nil {
			return nil, fmt.Errorf("postgres: the server at %s refused the connection: %w; %s", masked, pgErr, fix)
		}
		return nil, fmt.Errorf("postgres: cannot reach the database at %s: %w: %w", masked, domain.ErrUnavailable, err)
	}
	db := &DB{pool: pool, schema: cfg.Schema, url: masked}
	if err := db.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// Close closes every connection of the pool; the stores must not be used
// afterwards.
func (db *DB) Close() { db.pool.Close() }

// Rides returns the ride store backed by this database.
func (db *DB) Rides() *RideStore { return &RideStore{pool: db.pool} }

// Resorts returns the reference-data store backed by this database.
func (db *DB) Resorts() *ResortStore { return &ResortStore{pool: db.pool} }

// Ping reports whether the database answers, for readiness checks.
func (db *DB) Ping(ctx context.Context) error {
	return classify(ctx, "postgres: ping "+db.url, db.pool.Ping(ctx))
}

// CountRides is the number of rides stored. It is not part of the port: the
// load tests and the benchmark use it to check that every ride counts once.
func (db *DB) CountRides(ctx context.Context) (int64, error) {
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM rides`).Scan(&n)
	return n, classify(ctx, "postgres: count rides", err)
}

// classify wraps err with the operation and, when it means the database
// cannot take work right now, with domain.ErrUnavailable so that callers
// (the persister, the HTTP layer) retry or answer 503 instead of failing the
// work for good. A caller's own cancelled or expired context is not the
// database's fault and is reported as it is.
func classify(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if transient(err) {
		return fmt.Errorf("%s: %w: %w", op, domain.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// refusedForGood picks out the server's answers to a connection that no
// retry will change: the database does not exist (3D000), or the role does
// not exist or may not log in (class 28). They are configuration mistakes,
// so they are not domain.ErrUnavailable ("temporarily unavailable" would
// send the reader to wait); it returns the server's error, whose message
// names the database or role, and what to do about it.
func refusedForGood(err error) (*pgconn.PgError, string) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return nil, ""
	}
	switch {
	case pgErr.Code == "3D000": // invalid_catalog_name
		return pgErr, "create it (createdb, or CREATE DATABASE) or name an existing database in the URL"
	case strings.HasPrefix(pgErr.Code, "28"): // invalid authorization: no such role, bad password, pg_hba.conf
		return pgErr, "check the user and password in the URL (a missing role: createuser, or CREATE ROLE ... LOGIN)"
	}
	return nil, ""
}

// transient reports whether trying again later may succeed.
func transient(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		// Not a server's answer: the connection could not be made, broke,
		// or timed out. Our statements have fixed, known argument types,
		// so an encoding error is a bug that tests catch, not a case here.
		return true
	}
	if pgErr.Code == "55P03" { // lock_not_available
		return true
	}
	switch pgErr.Code[:2] {
	case "08", // connection exception
		"40", // transaction rollback: serialization failure, deadlock
		"53", // insufficient resources: too many connections, disk full
		"57", // operator intervention: statement timeout, shutdown, starting up
		"58": // system error
		return true
	}
	return false
}
