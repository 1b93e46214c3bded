package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The schema's history: files named NNNN_what.sql, applied in version
// order, each exactly once. Never edit an applied file; add the next one.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey is the first half of the advisory lock taken while
// migrating; the second half is the schema's hash, so that processes
// migrating different schemas (parallel tests) do not wait for each other.
const migrationLockKey = 0x5C1DA7A

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, path := range names {
		name := strings.TrimPrefix(path, "migrations/")
		prefix, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version number and an underscore", name)
		}
		body, err := migrationFiles.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}

// Migrate creates the schema if needed and applies the pending migrations.
// It is idempotent and safe to run from several processes at once: the
// whole run is one transaction holding an advisory lock, so the second
// process waits, then finds nothing left to do. PostgreSQL's DDL is
// transactional, so a failed migration leaves the schema as it was.
func (db *DB) Migrate(ctx context.Context) error {
	migrations, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("postgres: load migrations: %w", err)
	}
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		// Building an index on a large table may outlast the statement
		// timeout meant for queries.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(migrationLockKey), db.schema); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		if db.schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{db.schema}.Sanitize()); err != nil {
				return fmt.Errorf("create schema %q: %w", db.schema, err)
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		for _, m := range migrations {
			if slices.Contains(applied, int32(m.version)) {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("record %s: %w", m.name, err)
			}
		}
		return nil
	})
	return classify(ctx, fmt.Sprintf("postgres: migrate schema %q at %s", db.schema, db.url), err)
}

// SchemaVersion is the highest migration applied, 0 when none is: what
// `skiapi migrate` reports after it ran.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := db.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, classify(ctx, "postgres: read schema version", err)
}
