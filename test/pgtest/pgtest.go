// Package pgtest gives tests the machine's PostgreSQL (scripts/services.sh
// starts it) and schemas of their own, dropped when the test ends, so runs
// never see each other's rows. An unreachable server fails the test, naming
// it; tests that need PostgreSQL skip only under -short (test/needs).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skidata/skidata/test/needs"
)

// DefaultURL is the PostgreSQL this project's machines run for tests.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL is SKIDATA_TEST_POSTGRES_URL, or DefaultURL. It is how a test says
// it needs PostgreSQL: under -short it skips t, naming the server.
func URL(t testing.TB) string {
	t.Helper()
	return needs.URL(t, "PostgreSQL", "SKIDATA_TEST_POSTGRES_URL", DefaultURL)
}

// Admin connects to the test database outside the code under test, to
// prepare and inspect it; the connection closes when the test ends.
func Admin(t testing.TB) *pgx.Conn {
	t.Helper()
	url := URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("this test needs the PostgreSQL server at %s (set SKIDATA_TEST_POSTGRES_URL, or run scripts/services.sh): %v", url, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Schema returns the name of a schema no other test or run uses
// (skidata_<kind>_<random>), dropped with everything in it when the test
// ends. Register it before starting anything that uses it: cleanups run last
// registered first, so the drop comes after that has stopped.
func Schema(t testing.TB, kind string) string {
	t.Helper()
	admin := Admin(t)
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	schema := "skidata_" + kind + "_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop test schema %s: %v", schema, err)
		}
	})
	return schema
}
