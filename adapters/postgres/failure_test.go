package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/test/pgtest"
)

// unreachableURL points at a port nothing listens on (loopback, so the
// refusal is immediate).
const unreachableURL = "postgres://skier:s3cret@127.0.0.1:1/ski?sslmode=disable"

func TestOpenDatabaseDownNamesMaskedURL(t *testing.T) {
	db, err := Open(testCtx(t, 30*time.Second), Config{URL: unreachableURL, ConnectTimeout: time.Second})
	if err == nil {
		db.Close()
		t.Fatal("Open on an unreachable database succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "postgres://skier:xxxxx@127.0.0.1:1/ski") {
		t.Errorf("error does not name the masked URL: %s", msg)
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("error shows the password: %s", msg)
	}
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("error is not domain.ErrUnavailable: %s", msg)
	}
}

func TestAddRidesConnectionFailureIsUnavailable(t *testing.T) {
	// A pool that was fine at start-up and lost its server: pgxpool dials
	// lazily, so a pool on a dead address behaves the same.
	pc, err := Config{URL: unreachableURL, ConnectTimeout: time.Second}.poolConfig()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(testCtx(t, 10*time.Second), pc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := &RideStore{pool: pool}
	err = store.AddRides(testCtx(t, 10*time.Second), []domain.LiftRide{domain.MustLiftRide(1, "2024", 1, 1, 1, 1)})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("AddRides with the database gone = %v; want domain.ErrUnavailable", err)
	}
}

func TestAddRidesStatementTimeoutIsUnavailable(t *testing.T) {
	db := openTestDB(t, Config{MaxConns: 2, StatementTimeout: 200 * time.Millisecond})
	ctx := testCtx(t, 30*time.Second)
	// Another session holds the table locked, as a long migration or a
	// VACUUM FULL would; the batch waits until the statement timeout.
	lock, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `LOCK TABLE rides IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	err = db.Rides().AddRides(ctx, []domain.LiftRide{domain.MustLiftRide(1, "2024", 1, 1, 1, 1)})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("AddRides past the statement timeout = %v; want domain.ErrUnavailable", err)
	}
}

func TestAddRidesCancelledContextIsNotUnavailable(t *testing.T) {
	db := openTestDB(t, Config{MaxConns: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := db.Rides().AddRides(ctx, []domain.LiftRide{domain.MustLiftRide(1, "2024", 1, 1, 1, 1)})
	if err == nil || errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("AddRides with a cancelled context = %v; want an error that is not ErrUnavailable", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("AddRides with a cancelled context = %v; want it to wrap context.Canceled", err)
	}
}

func TestConcurrentOpenMigratesOnce(t *testing.T) {
	schema := pgtest.Schema(t, "migrate")
	first := openTestDB(t, Config{MaxConns: 1, Schema: schema})
	// Several more processes start at once on the same schema.
	const starters = 4
	errs := make(chan error, starters)
	for range starters {
		go func() {
			db, err := Open(testCtx(t, 30*time.Second), Config{URL: pgtest.URL(t), MaxConns: 1, Schema: schema})
			if err == nil {
				db.Close()
			}
			errs <- err
		}()
	}
	for range starters {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Open: %v", err)
		}
	}
	ctx := testCtx(t, 30*time.Second)
	if err := first.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	migrations, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := first.pool.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != len(migrations) {
		t.Errorf("schema_migrations holds versions %v; want each of the %d migrations once", versions, len(migrations))
	}
}

// withURLPart returns the test server's URL with its database or user
// replaced.
func withURLPart(t *testing.T, database, user string) string {
	t.Helper()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil || u.Scheme == "" {
		t.Fatalf("SKIDATA_TEST_POSTGRES_URL must be a postgres:// URL for this test: %q", pgtest.URL(t))
	}
	if database != "" {
		u.Path = "/" + database
	}
	if user != "" {
		u.User = url.User(user)
	}
	return u.String()
}

// TestOpenMissingDatabaseOrRoleSaysSo connects to the real server with a
// database name, then a user name, that do not exist: the error must say
// which and that it does not exist, and must not call it temporary.
func TestOpenMissingDatabaseOrRoleSaysSo(t *testing.T) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	suffix := hex.EncodeToString(b)
	for _, tc := range []struct {
		name, url, want, code string
	}{
		{"database", withURLPart(t, "skidata_nodb_"+suffix, ""), `database "skidata_nodb_` + suffix + `" does not exist`, "3D000"},
		{"role", withURLPart(t, "", "skidata_norole_"+suffix), `role "skidata_norole_` + suffix + `" does not exist`, "28000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Open(testCtx(t, 30*time.Second), Config{URL: tc.url})
			if err == nil {
				db.Close()
				t.Fatalf("Open(%s) succeeded", tc.url)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.code) {
				t.Errorf("error %q; want it to say %s (SQLSTATE %s)", msg, tc.want, tc.code)
			}
			if errors.Is(err, domain.ErrUnavailable) || strings.Contains(msg, "temporarily unavailable") {
				t.Errorf("error %q calls a missing %s temporary", msg, tc.name)
			}
		})
	}
}
