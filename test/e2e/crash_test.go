package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skidata/skidata/test/apitest"
)

// The kill -9 tests: rides are posted concurrently (so that they share
// batches: group commit), the processes are killed with SIGKILL in the
// middle of the load, restarted, and every ride answered 201 must then be
// in the store, each once. What "in the store" means is read from the
// PostgreSQL table itself, not through the API.

// crashRide is the i-th ride of these tests: day 21 of season 2025 at
// resort 1, 200 skiers, each ride its own (skier, time).
func crashRide(i int) rolesRide {
	return rolesRide{skier: 8100 + i%200, time: i / 200, lift: 1 + i%40}
}

const crashDay = 21

func postCrashRide(c *http.Client, base string, r rolesRide) (int, error) {
	return postRideOnDay(c, base, crashDay, r)
}

// crashLoad posts rides from workers goroutines until kill has run and
// every worker has seen its first failure after it (or the rides run out),
// calling kill once killAfter rides were answered 201. It returns the rides
// answered 201.
func crashLoad(t *testing.T, base string, total, workers, killAfter int, kill func()) []rolesRide {
	t.Helper()
	client := &http.Client{
		Timeout:   20 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers},
	}
	defer client.CloseIdleConnections()
	var (
		mu       sync.Mutex
		accepted []rolesRide
		next     atomic.Int64
		killed   = make(chan struct{})
		killOnce sync.Once
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= total {
					return
				}
				r := crashRide(i)
				code, err := postCrashRide(client, base, r)
				if err == nil && code == http.StatusCreated {
					mu.Lock()
					accepted = append(accepted, r)
					n := len(accepted)
					mu.Unlock()
					if n == killAfter {
						killOnce.Do(func() { kill(); close(killed) })
					}
					continue
				}
				select {
				case <-killed:
					return // the process is gone: the load is over
				default:
				}
				if err == nil && code != http.StatusServiceUnavailable {
					t.Errorf("POST %+v before the kill: %d; want 201 or 503", r, code)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("the load ended with %d rides accepted before the kill threshold %d", len(accepted), killAfter)
	}
	return accepted
}

// storedCrashRides reads every ride of crashDay from the schema's table,
// with how many times each is there.
func storedCrashRides(ctx context.Context, conn *pgx.Conn, schema string) (map[rolesRide]int, error) {
	rows, err := conn.Query(ctx, `SELECT skier_id, ride_time, lift_id FROM `+pgx.Identifier{schema, "rides"}.Sanitize()+
		` WHERE resort_id = 1 AND season_id = 2025 AND day_id = $1`, crashDay)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[rolesRide]int{}
	for rows.Next() {
		var r rolesRide
		if err := rows.Scan(&r.skier, &r.time, &r.lift); err != nil {
			return nil, err
		}
		out[r]++
	}
	return out, rows.Err()
}

// waitEveryAcceptedStoredOnce polls the table until every accepted ride is
// there; then no ride may be there twice, and none that was never posted.
func waitEveryAcceptedStoredOnce(t *testing.T, conn *pgx.Conn, schema string, accepted []rolesRide, total int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*apitest.Deadline)
	defer cancel()
	var stored map[rolesRide]int
	apitest.Eventually(t, fmt.Sprintf("all %d rides answered 201 in the store", len(accepted)), func() string {
		var err error
		if stored, err = storedCrashRides(ctx, conn, schema); err != nil {
			return err.Error()
		}
		missing := 0
		for _, r := range accepted {
			if stored[r] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Sprintf("%d of them missing (%d rides stored)", missing, len(stored))
		}
		return ""
	})
	posted := map[rolesRide]bool{}
	for i := range total {
		posted[crashRide(i)] = true
	}
	for r, n := range stored {
		if n != 1 {
			t.Errorf("ride %+v stored %d times; want once", r, n)
		}
		if !posted[r] {
			t.Errorf("ride %+v stored but never posted", r)
		}
	}
	t.Logf("%d rides answered 201, %d stored (rides whose answer the kill cut off may be stored too)", len(accepted), len(stored))
}

// TestKill9InprocPostgresLosesNoAcceptedRide: with the in-process queue and
// PostgreSQL, a 201 comes after the store committed the ride, so killing
// the process mid-load loses none of the rides it answered 201 for.
func TestKill9InprocPostgresLosesNoAcceptedRide(t *testing.T) {
	t.Parallel()
	bin := buildSkiapi(t)
	cfg, admin := postgresConfig(t)
	flags := []string{"--store", "postgres", "--database-url", cfg.Postgres.URL, "--db-schema", cfg.Postgres.Schema, "--shutdown-timeout", "30s"}
	svc := startSkiapi(t, "inproc+postgres", bin, flags...)

	const total = 20_000
	accepted := crashLoad(t, svc.base, total, 32, 1500, func() { svc.kill9(t) })
	again := startSkiapi(t, "inproc+postgres restarted", bin, flags...)
	waitEveryAcceptedStoredOnce(t, admin, cfg.Postgres.Schema, accepted, total)
	again.terminate(t)
}

// TestKill9RabbitMQRolesLoseNoAcceptedRide: API and consumer processes over
// RabbitMQ quorum queues and PostgreSQL, both killed with SIGKILL mid-load
// (the API holding batches waiting for their confirm, the consumer holding
// deliveries), then restarted: every ride answered 201 reaches the store,
// once.
func TestKill9RabbitMQRolesLoseNoAcceptedRide(t *testing.T) {
	t.Parallel()
	bin := buildSkiapi(t)
	cfg, admin := postgresConfig(t)
	url, prefix := rabbitTopology(t, "crash")
	flags := []string{
		"--queue", "rabbitmq", "--amqp-url", url, "--amqp-prefix", prefix,
		"--store", "postgres", "--database-url", cfg.Postgres.URL, "--db-schema", cfg.Postgres.Schema,
		"--shutdown-timeout", "30s",
	}
	start := func(name string, args ...string) *proc { return startSkiapi(t, name, bin, args...) }
	killBothRolesMidLoad(t, start, append([]string{"--role", "api"}, flags...), append([]string{"--role", "consumer"}, flags...), admin, cfg.Postgres.Schema)
}

// killBothRolesMidLoad starts an API and a consumer process with start,
// posts crashLoad's rides to the API, kills both with SIGKILL mid-load,
// restarts them and waits until every ride answered 201 is in the schema's
// table, once.
func killBothRolesMidLoad(t *testing.T, start func(name string, args ...string) *proc, apiFlags, consumerFlags []string, admin *pgx.Conn, schema string) {
	t.Helper()
	api := start("api", apiFlags...)
	consumer := start("consumer", consumerFlags...)
	const total = 20_000
	accepted := crashLoad(t, api.base, total, 32, 1500, func() {
		consumer.kill9(t)
		api.kill9(t)
	})
	api = start("api restarted", apiFlags...)
	consumer = start("consumer restarted", consumerFlags...)
	waitEveryAcceptedStoredOnce(t, admin, schema, accepted, total)
	api.terminate(t)
	consumer.terminate(t)
}
