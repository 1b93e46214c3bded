package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skidata/skidata/test/pgtest"
)

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// uniqueSchema names a schema no other test (or run) uses.
func uniqueSchema(t testing.TB) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "skidata_test_" + hex.EncodeToString(b)
}

// openTestDB opens the test database in a fresh schema of its own and drops
// the schema when the test ends, so parallel tests never see each other's
// rows. An unreachable server fails the test, naming it.
func openTestDB(t testing.TB, cfg Config) *DB {
	t.Helper()
	cfg.URL = pgtest.URL()
	if cfg.Schema == "" {
		cfg.Schema = uniqueSchema(t)
	}
	db, err := Open(testCtx(t, 30*time.Second), cfg)
	if err != nil {
		t.Fatalf("these tests need the PostgreSQL server at %s (override with SKIDATA_TEST_POSTGRES_URL): %v", MaskURL(cfg.URL), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{cfg.Schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop test schema %s: %v", cfg.Schema, err)
		}
		db.Close()
	})
	return db
}
