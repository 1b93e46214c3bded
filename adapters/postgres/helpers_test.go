package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/skidata/skidata/test/pgtest"
)

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// openTestDB opens the test database in a fresh schema of its own and drops
// the schema when the test ends, so parallel tests never see each other's
// rows. An unreachable server fails the test, naming it.
func openTestDB(t testing.TB, cfg Config) *DB {
	t.Helper()
	cfg.URL = pgtest.URL(t)
	if cfg.Schema == "" {
		cfg.Schema = pgtest.Schema(t, "test")
	}
	db, err := Open(testCtx(t, 30*time.Second), cfg)
	if err != nil {
		t.Fatalf("these tests need the PostgreSQL server at %s (override with SKIDATA_TEST_POSTGRES_URL): %v", MaskURL(cfg.URL), err)
	}
	t.Cleanup(db.Close) // before pgtest drops the schema: cleanups run last-in first-out
	return db
}
