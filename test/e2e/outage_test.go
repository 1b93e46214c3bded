package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/pgtest"
	"github.com/skidata/skidata/test/proxytest"
)

// viaProxy is the URL (PostgreSQL, AMQP) with its host replaced by the
// proxy's.
func viaProxy(t *testing.T, raw, proxyAddr string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	u.Host = proxyAddr
	return u.String()
}

// hostOf is the URL's host:port.
func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	return u.Host
}

// metricValue is the value of a metric line on /metrics ("" when absent).
func metricValue(t *testing.T, base, series string) string {
	t.Helper()
	r := apitest.Call(t, "GET", base+"/metrics", "")
	for _, line := range strings.Split(string(r.Body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// TestStoreOutageLongerThanDeliveryLimitDeadLettersNothing: the consumer's
// connection to PostgreSQL is cut (through a TCP proxy the test runs) for
// far longer than delivery limit x retry window, while rides keep being
// accepted. The consumer holds its batch and retries instead of handing it
// back, so afterwards the dead-letter queue is empty, every ride answered
// 201 is stored once, and /metrics counts no failed or dead-lettered ride.
func TestStoreOutageLongerThanDeliveryLimitDeadLettersNothing(t *testing.T) {
	t.Parallel()
	bin := buildSkiapi(t)
	cfg, admin := postgresConfig(t)
	upstream, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := proxytest.Start(t, upstream.Host)
	amqpURL, prefix := rabbitTopology(t, "outage", func(c *rabbitmq.Config) { c.DeliveryLimit = 2 })
	common := []string{"--queue", "rabbitmq", "--amqp-url", amqpURL, "--amqp-prefix", prefix, "--amqp-delivery-limit", "2",
		"--store", "postgres", "--db-schema", cfg.Postgres.Schema, "--shutdown-timeout", "30s"}
	// The API reads resorts from the database directly; only the
	// consumer's writes go through the proxy.
	api := startSkiapi(t, "api", bin, append([]string{"--role", "api", "--database-url", cfg.Postgres.URL}, common...)...)
	// Two deliveries and a 200 ms retry window: handing batches back during
	// the outage would dead-letter them within about a second.
	consumer := startSkiapi(t, "consumer", bin, append([]string{"--role", "consumer",
		"--database-url", viaProxy(t, cfg.Postgres.URL, proxy.Addr()),
		"--batch-retry-for", "200ms",
		"--db-connect-timeout", "1s", "--db-statement-timeout", "2s"}, common...)...)

	client := &http.Client{Timeout: 20 * time.Second}
	const total = 600
	var (
		mu       sync.Mutex
		accepted []rolesRide
	)
	post := func(from, to int) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := from + w; i < to; i += 8 {
					r := crashRide(i)
					code, err := postCrashRide(client, api.base, r)
					if err != nil || code != http.StatusCreated {
						t.Errorf("POST %+v: %d, %v; want 201 (the broker takes rides while the store is away)", r, code, err)
						continue
					}
					mu.Lock()
					accepted = append(accepted, r)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	post(0, total/3)
	waitEveryAcceptedStoredOnce(t, admin, cfg.Postgres.Schema, accepted, total)

	proxy.Cut()
	post(total/3, total)
	// Hold the outage until the consumer has retried a held batch many
	// times: well past two deliveries of 200 ms retry windows.
	apitest.Eventually(t, "the consumer retrying a batch through the outage", func() string {
		if n := strings.Count(consumer.log(), "persist batch failed; retrying"); n < 8 {
			return fmt.Sprintf("%d retries logged", n)
		}
		return ""
	})
	proxy.Restore()

	waitEveryAcceptedStoredOnce(t, admin, cfg.Postgres.Schema, accepted, total)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dlq, err := rabbitmq.Open(ctx, rabbitmq.Config{URL: amqpURL, Prefix: prefix, MaxLength: compose.DefaultConfig().QueueCapacity, DeliveryLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dlq.Disconnect() }()
	if dls, err := dlq.DLQList(ctx, 10); err != nil || len(dls) != 0 {
		t.Errorf("dead-letter queue after the outage holds %d letters (%v); want none", len(dls), err)
	}
	if v := metricValue(t, consumer.base, "skidata_persist_failed_total"); v != "0" {
		t.Errorf("skidata_persist_failed_total = %q; want 0", v)
	}
	if v := metricValue(t, consumer.base, `skidata_rides_dead_lettered_total{reason="rejected"}`); v != "" && v != "0" {
		t.Errorf("skidata_rides_dead_lettered_total = %q; want none", v)
	}
	api.terminate(t)
	consumer.terminate(t)
}

// TestPostToADeletedRideQueueIs503: publishing is mandatory, so once the
// ride queue is gone a POST is answered 503 (the broker returned the ride)
// rather than 201 for a ride the broker confirmed and dropped.
func TestPostToADeletedRideQueueIs503(t *testing.T) {
	cfg := rabbitConfig(t, "deleted")
	base := apitest.Start(t, cfg)
	url := base + "/skiers/1/seasons/2025/days/3/skiers/77"
	if r := apitest.Call(t, "POST", url, `{"time":1,"liftID":2}`); r.Status != http.StatusCreated {
		t.Fatalf("POST before the queue is deleted: %d %s; want 201", r.Status, r.Body)
	}
	// Once the ride is stored the persister is consuming: the queue is
	// deleted under a running consumer, not before it started.
	apitest.Eventually(t, "the first ride consumed", func() string {
		if d := queueDepth(t, base); d != 0 {
			return fmt.Sprintf("queue depth %d", d)
		}
		return ""
	})
	conn, err := amqp.Dial(cfg.AMQP.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDelete(cfg.AMQP.ShardQueue(0), false, false, false); err != nil {
		t.Fatalf("delete the ride queue: %v", err)
	}
	if r := apitest.Call(t, "POST", url, `{"time":2,"liftID":3}`); r.Status != http.StatusServiceUnavailable {
		t.Errorf("POST after the ride queue was deleted: %d %s; want 503", r.Status, r.Body)
	}
}
