package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/pgtest"
)

// postgresConfig is a service configuration on a schema of its own, dropped
// when the test ends (after the service has stopped: the caller starts the
// service after this), and a connection for preparing and inspecting it.
func postgresConfig(t *testing.T) (compose.Config, *pgx.Conn) {
	t.Helper()
	admin := pgtest.Admin(t)
	cfg := compose.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Store = "postgres"
	cfg.Postgres.URL = pgtest.URL(t)
	cfg.Postgres.Schema = pgtest.Schema(t, "e2e")
	return cfg, admin
}

func TestPostgresInprocEndToEnd(t *testing.T) {
	cfg, _ := postgresConfig(t)
	apitest.Run(t, apitest.Start(t, cfg))
}

// TestPostgresDownAtStartFailsNamingMaskedURL: a service pointed at a
// database that does not answer refuses to start, and says where it looked
// without printing the password.
func TestPostgresDownAtStartFailsNamingMaskedURL(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Store = "postgres"
	cfg.Postgres.URL = "postgres://skier:s3cret@127.0.0.1:1/nowhere?sslmode=disable" // nothing listens on port 1
	cfg.Postgres.ConnectTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, cleanup, err := compose.Build(ctx, cfg)
	if err == nil {
		cleanup()
		t.Fatalf("Build succeeded with the database down: %v", svc)
	}
	msg := err.Error()
	if !strings.Contains(msg, "postgres://skier:xxxxx@127.0.0.1:1/nowhere") {
		t.Errorf("error does not name the masked URL: %s", msg)
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("error leaks the password: %s", msg)
	}
}

// TestPostgresOutageKeepsBatchUntilStored: while the rides table is locked
// by another session, every write of the persister times out; the batch
// stays unacknowledged in the queue through at least one retry, no POST is
// answered, and once the lock is released every ride is stored, once, and
// every POST answered 201.
func TestPostgresOutageKeepsBatchUntilStored(t *testing.T) {
	cfg, admin := postgresConfig(t)
	cfg.Postgres.StatementTimeout = 300 * time.Millisecond
	cfg.Persister.RetryFor = time.Second // so batches also go back to the queue and are redelivered
	base := apitest.Start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rides := pgx.Identifier{cfg.Postgres.Schema, "rides"}.Sanitize()

	// The outage: an open transaction holding the strongest table lock.
	locker, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = locker.Rollback(context.Background()) }()
	if _, err := locker.Exec(ctx, `LOCK TABLE `+rides+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatalf("lock the rides table: %v", err)
	}

	// With the in-process queue and a durable store a POST is answered
	// only once its ride is committed, so the POSTs wait out the outage:
	// they are sent concurrently and their answers collected at the end.
	const n = 50
	const skier = 424242
	statuses := make(chan int, n)
	for i := range n {
		go func() {
			statuses <- postStatus(newRide(base, 1, "2025", 7, skier, int32(10+i), int32(1+i%40)))
		}()
	}

	// Wait for two different write attempts to be blocked on the lock: the
	// first one timed out and the persister tried again.
	probe := pgtest.Admin(t)
	waitingSince := func() (time.Time, bool) {
		var started time.Time
		err := probe.QueryRow(ctx, `
			SELECT a.query_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.relation = $1::regclass AND NOT l.granted
			ORDER BY a.query_start LIMIT 1`, rides).Scan(&started)
		return started, err == nil
	}
	var first time.Time
	apitest.Eventually(t, "a persister write blocked on the locked table", func() string {
		if s, ok := waitingSince(); ok {
			first = s
			return ""
		}
		return "no write waiting"
	})
	apitest.Eventually(t, "a second write attempt after the first timed out", func() string {
		if s, ok := waitingSince(); ok && s.After(first) {
			return ""
		}
		return "only the first attempt seen"
	})
	apitest.Eventually(t, fmt.Sprintf("all %d rides queued during the outage", n), func() string {
		if depth := queueDepth(t, base); depth != n {
			return fmt.Sprintf("queue depth %d", depth)
		}
		return ""
	})
	select {
	case code := <-statuses:
		t.Fatalf("a POST was answered %d during the outage; want the answer only once its ride is stored", code)
	default:
	}

	// The database comes back.
	if err := locker.Rollback(ctx); err != nil {
		t.Fatalf("release the lock: %v", err)
	}
	apitest.Eventually(t, "every ride stored after the outage", func() string {
		var stored int
		if err := probe.QueryRow(ctx, `SELECT count(*) FROM `+rides+` WHERE skier_id = $1`, skier).Scan(&stored); err != nil {
			return err.Error()
		}
		if depth := queueDepth(t, base); stored != n || depth != 0 {
			return fmt.Sprintf("%d of %d rides stored, queue depth %d", stored, n, depth)
		}
		return ""
	})
	for range n {
		if code := <-statuses; code != http.StatusCreated {
			t.Errorf("POST answered %d after the outage; want 201", code)
		}
	}
	// The table's primary key is the ride's identity, so a count of n is
	// every ride once; the API agrees.
	want := 0
	for i := range n {
		want += 10 * (1 + i%40)
	}
	r := apitest.Send(t, apitest.Req(httpapi.NewGetSkierDayVerticalRequest(httpapi.ServerURL(base), 1, "2025", "7", skier)))
	var got int
	if err := json.Unmarshal(r.Body, &got); r.Status != http.StatusOK || err != nil || got != want {
		t.Errorf("day vertical after the outage: status %d, body %s; want %d", r.Status, r.Body, want)
	}
}

// postStatus sends the request and returns the answer's status, 0 if none
// came.
func postStatus(req *http.Request, err error) int {
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// queueDepth is the depth /readyz reports.
func queueDepth(t *testing.T, base string) int64 {
	t.Helper()
	r := readyz(t, base)
	var body struct{ QueueDepth *int64 }
	if err := json.Unmarshal(r.Body, &body); err != nil || body.QueueDepth == nil {
		t.Fatalf("readyz: status %d, body %s: no queueDepth", r.Status, r.Body)
	}
	return *body.QueueDepth
}
